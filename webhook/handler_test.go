// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/golden"
	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/policy"
)

// staticClusters is a ClusterLookup for handler unit tests; the real informer
// cache is exercised through a real API server in test/integration.
type staticClusters map[string]mutate.ClusterInfo

func (s staticClusters) Lookup(ns string) (mutate.ClusterInfo, error) {
	if info, ok := s[ns]; ok {
		return info, nil
	}
	return mutate.ClusterInfo{}, &MissingClusterObjectsError{Namespace: ns, Missing: []string{`Secret "rook-ceph-mon" (key fsid)`}}
}

var clusters = staticClusters{
	"rook-ceph": {Namespace: "rook-ceph", FSID: "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b"},
	"ceph-east": {Namespace: "ceph-east", FSID: "47913c99-d1ed-4a9b-bd55-2b49490b1229"},
}

// staticLive is a LiveLookup for handler unit tests: CephCluster rook-ceph
// of liveCephClusterUID in every namespace, and Deployments by ns/name.
type staticLive map[string]metav1.Object

const liveCephClusterUID = "6f1d7c3e-live"

func (s staticLive) CephClusterLive(_ context.Context, _ string, ref metav1.OwnerReference) (bool, error) {
	return ref.Name == "rook-ceph" && ref.UID == liveCephClusterUID, nil
}

func (s staticLive) Deployment(_ context.Context, ns, name string) (metav1.Object, error) {
	if o, ok := s[ns+"/"+name]; ok {
		return o, nil
	}
	return nil, nil
}

var live = staticLive{
	"rook-ceph/rook-ceph-mgr-new": &metav1.ObjectMeta{Name: "rook-ceph-mgr-new", Labels: map[string]string{"app": "rook-ceph-mgr", "mgr": "new"}},
}

func newMutator(t testing.TB, p *mutate.Policy) *admission.Webhook {
	return &admission.Webhook{Handler: &Mutator{Clusters: clusters, Live: live, Policy: policy.Static(p)}}
}

func newValidator(t testing.TB, p *mutate.Policy) *admission.Webhook {
	return &admission.Webhook{Handler: &Validator{Clusters: clusters, Live: live, Policy: policy.Static(p)}}
}

var deploymentKind = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

func request(op admissionv1.Operation, raw []byte, old []byte) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "uid-1", Kind: deploymentKind, Namespace: "rook-ceph", Name: "rook-ceph-mgr-a",
		Operation: op, Object: runtime.RawExtension{Raw: raw}, OldObject: runtime.RawExtension{Raw: old},
	}}
}

// fixture is an input of mutate's golden corpus with its policy.
type fixture struct {
	name   string
	raw    []byte
	policy *mutate.Policy
}

func fixtures(t testing.TB) []fixture {
	t.Helper()
	cases, err := golden.Cases("..")
	if err != nil {
		t.Fatal(err)
	}
	var fs []fixture
	for _, c := range cases {
		y, err := os.ReadFile(c.Input)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := yaml.YAMLToJSON(y)
		if err != nil {
			t.Fatal(err)
		}
		p := mutate.DefaultPolicy()
		if c.Policy != "" {
			py, err := os.ReadFile(c.Policy)
			if err != nil {
				t.Fatal(err)
			}
			if p, err = mutate.ParsePolicy(py); err != nil {
				t.Fatal(err)
			}
		}
		fs = append(fs, fixture{name: c.Name, raw: raw, policy: p})
	}
	return fs
}

func decode(t testing.TB, raw []byte) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := json.Unmarshal(raw, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// applyPatch applies the response's JSON patch as the API server would.
func applyPatch(t testing.TB, raw []byte, resp admission.Response) []byte {
	t.Helper()
	if len(resp.Patch) == 0 {
		return raw
	}
	p, err := jsonpatchapply.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(raw)
	if err != nil {
		t.Fatalf("patch does not apply: %v\npatch: %s", err, resp.Patch)
	}
	return out
}

// TestPatchReproducesComplete proves that the hand-built patch, applied to the
// request object, yields exactly what Complete returns, and that the patched
// object then passes the validating webhook and needs no second patch.
func TestPatchReproducesComplete(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			ctx := t.Context()
			in := decode(t, f.raw)
			req := request(admissionv1.Create, f.raw, nil)
			req.Namespace = in.Namespace
			resp := newMutator(t, f.policy).Handle(ctx, req)
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			patched := applyPatch(t, f.raw, resp)
			want, _ := mutate.Complete(in, clusters[in.Namespace], f.policy)
			// and stamped with what completed it.
			mutate.StampInPlace(want.Deployment, mutate.Stamp{Policy: f.policy.Hash()})
			if got := decode(t, patched); !equality.Semantic.DeepEqual(got, want.Deployment) {
				t.Errorf("patched object differs from Complete's output\npatch: %s", resp.Patch)
			}
			if len(resp.Warnings) != len(want.Warnings) {
				t.Errorf("warnings %q, want %q", resp.Warnings, want.Warnings)
			}

			req.Operation, req.Object.Raw, req.OldObject.Raw = admissionv1.Update, patched, patched
			again := newMutator(t, f.policy).Handle(ctx, req)
			if !again.Allowed || len(again.Patch) != 0 || again.PatchType != nil {
				t.Errorf("second admission of the completed object patched again: %s", again.Patch)
			}
			v := newValidator(t, f.policy).Handle(ctx, req)
			if !v.Allowed {
				t.Errorf("completed object refused by the validator: %v", v.Result)
			}
		})
	}
}

func TestBadRequestsAreCleanErrors(t *testing.T) {
	minimal, _ := yaml.YAMLToJSON(must(os.ReadFile("../manifests/examples/minimal-mgr.yaml")))
	cases := map[string]struct {
		req      admission.Request
		wantCode int32
		allowed  bool
		wantText string
	}{
		"malformed json": {request(admissionv1.Create, []byte(`{"kind":"Deployment",`), nil), http.StatusBadRequest, false, "cannot decode"},
		"empty object":   {request(admissionv1.Create, nil, nil), http.StatusBadRequest, false, "cannot decode"},
		"wrong kind": {func() admission.Request {
			r := request(admissionv1.Create, []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`), nil)
			r.Kind = metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}
			return r
		}(), http.StatusBadRequest, false, "apps/v1 Deployments only"},
		"pod body under a Deployment kind": {request(admissionv1.Create, []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`), nil), http.StatusBadRequest, false, "cannot decode"},
		"wrong field types":                {request(admissionv1.Create, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":"x"}}`), nil), http.StatusBadRequest, false, "cannot decode"},
		"not a mgr":                        {request(admissionv1.Create, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web"}}}`), nil), http.StatusOK, true, ""},
		"delete":                           {request(admissionv1.Delete, nil, minimal), http.StatusOK, true, ""},
		"namespace without cluster": {func() admission.Request {
			r := request(admissionv1.Create, minimal, nil)
			r.Namespace = "not-ceph"
			return r
		}(), http.StatusUnprocessableEntity, false, `Secret "rook-ceph-mon"`},
		"mgr label missing": {request(admissionv1.Create, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"m","labels":{"app":"rook-ceph-mgr"}}}`), nil),
			http.StatusUnprocessableEntity, false, "metadata.labels[mgr]"},
	}
	for name, tc := range cases {
		for hookName, hook := range map[string]*admission.Webhook{"mutate": newMutator(t, mutate.DefaultPolicy()), "validate": newValidator(t, mutate.DefaultPolicy())} {
			t.Run(name+"/"+hookName, func(t *testing.T) {
				resp := hook.Handle(t.Context(), tc.req)
				if resp.Allowed != tc.allowed {
					t.Fatalf("allowed=%v, want %v (%v)", resp.Allowed, tc.allowed, resp.Result)
				}
				code := int32(http.StatusOK)
				msg := ""
				if resp.Result != nil {
					code, msg = resp.Result.Code, resp.Result.Message
				}
				if code == 0 {
					code = http.StatusOK
				}
				if code != tc.wantCode || !strings.Contains(msg, tc.wantText) {
					t.Errorf("got %d %q, want %d containing %q", code, msg, tc.wantCode, tc.wantText)
				}
				if code >= 500 {
					t.Errorf("a bad request must never be a %d", code)
				}
			})
		}
	}
}

func TestValidatorUpdateCannotShedTheMgrLabel(t *testing.T) {
	in := decode(t, must(yaml.YAMLToJSON(must(os.ReadFile("../manifests/examples/minimal-mgr.yaml")))))
	res, _ := mutate.Complete(in, clusters["rook-ceph"], mutate.DefaultPolicy())
	old := must(json.Marshal(res.Deployment))
	renamed := res.Deployment.DeepCopy()
	renamed.Labels["mgr"] = "b"
	resp := newValidator(t, mutate.DefaultPolicy()).Handle(t.Context(), request(admissionv1.Update, must(json.Marshal(renamed)), old))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "metadata.labels[mgr]") {
		t.Errorf("renaming the mgr id was not refused on its field: %v", resp.Result)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestOutcomesAreCounted(t *testing.T) {
	minimal := must(yaml.YAMLToJSON(must(os.ReadFile("../manifests/examples/minimal-mgr.yaml"))))
	bad := decode(t, minimal)
	bad.Spec.Replicas = ptrTo[int32](2)
	res, _ := mutate.Complete(bad, clusters["rook-ceph"], mutate.DefaultPolicy())

	patched := testutil.ToFloat64(admissions.WithLabelValues("mutate", OutcomePatched))
	denied := testutil.ToFloat64(denials.WithLabelValues("validate", "spec.replicas"))
	newMutator(t, mutate.DefaultPolicy()).Handle(t.Context(), request(admissionv1.Create, minimal, nil))
	newValidator(t, mutate.DefaultPolicy()).Handle(t.Context(), request(admissionv1.Create, must(json.Marshal(res.Deployment)), nil))
	if got := testutil.ToFloat64(admissions.WithLabelValues("mutate", OutcomePatched)); got != patched+1 {
		t.Errorf("patched admissions %v, want %v", got, patched+1)
	}
	if got := testutil.ToFloat64(denials.WithLabelValues("validate", "spec.replicas")); got != denied+1 {
		t.Errorf("spec.replicas denials %v, want %v", got, denied+1)
	}

	// A namespace without its cluster objects is counted under its own reason.
	elsewhere := decode(t, minimal)
	elsewhere.Namespace = "not-a-cluster"
	missing := testutil.ToFloat64(denials.WithLabelValues("mutate", DenialClusterMissing))
	req := request(admissionv1.Create, must(json.Marshal(elsewhere)), nil)
	req.Namespace = "not-a-cluster"
	if resp := newMutator(t, mutate.DefaultPolicy()).Handle(t.Context(), req); resp.Allowed {
		t.Fatal("a mgr outside any cluster was admitted")
	}
	if got := testutil.ToFloat64(denials.WithLabelValues("mutate", DenialClusterMissing)); got != missing+1 {
		t.Errorf("%s denials %v, want %v", DenialClusterMissing, got, missing+1)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestDecoderAgreesWithAPIMachinery: on every fixture, raw and completed, the
// webhook's decoder yields exactly what the API machinery's decoder yields
// (FuzzDecodeDeployment extends this to any body; goccy/go-json, once used
// here for speed, failed it on case-variant field names).
func TestDecoderAgreesWithAPIMachinery(t *testing.T) {
	for _, f := range fixtures(t) {
		in := decode(t, f.raw)
		res, _ := mutate.Complete(in, clusters[in.Namespace], f.policy)
		for name, raw := range map[string][]byte{"input": f.raw, "completed": must(json.Marshal(res.Deployment))} {
			t.Run(f.name+"/"+name, func(t *testing.T) {
				req := request(admissionv1.Create, raw, nil)
				fast, _, ok := decodeDeployment(req, raw, "test")
				if !ok {
					t.Fatal("the webhook's decoder refused it")
				}
				want := &appsv1.Deployment{}
				if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, want); err != nil {
					t.Fatal(err)
				}
				if !equality.Semantic.DeepEqual(fast, want) {
					t.Error("decoders disagree")
				}
			})
		}
	}
}

// TestMalformedReviews: a review with no request, or an UPDATE without the old
// object, is a 400 from every handler, never an allow.
func TestMalformedReviews(t *testing.T) {
	handlers := map[string]admission.Handler{
		"mutate":   &Mutator{Clusters: clusters, Live: live, Policy: policy.Static(mutate.DefaultPolicy())},
		"validate": &Validator{Clusters: clusters, Live: live, Policy: policy.Static(mutate.DefaultPolicy())},
		"scale":    &ScaleValidator{Mgrs: staticMgrs{}, Live: live, Policy: policy.Static(mutate.DefaultPolicy())},
	}
	update := request(admissionv1.Update, []byte(`{"apiVersion":"apps/v1","kind":"Deployment"}`), nil)
	for hname, h := range handlers {
		for cname, req := range map[string]admission.Request{"no request": {}, "UPDATE without oldObject": update} {
			t.Run(hname+" "+cname, func(t *testing.T) {
				resp := h.Handle(t.Context(), req)
				if resp.Allowed || resp.Result == nil || resp.Result.Code != 400 || resp.Result.Message == "" {
					t.Errorf("got allowed=%v %+v, want a 400 with a reason", resp.Allowed, resp.Result)
				}
			})
		}
	}
}

// TestReasonsOf: denial reasons keep the field, with indices and map keys
// elided except the mgr and app labels, so the metric's label set is bounded.
func TestReasonsOf(t *testing.T) {
	errs := field.ErrorList{
		field.Invalid(field.NewPath("metadata", "labels").Key("mgr"), "", ""),
		field.Invalid(field.NewPath("metadata", "labels").Key("app"), "", ""),
		field.Invalid(field.NewPath("metadata", "annotations").Key("team"), "", ""),
		field.Invalid(field.NewPath("spec", "template", "spec", "containers").Index(3).Child("image"), "", ""),
	}
	want := []string{"metadata.labels[mgr]", "metadata.labels[app]", "metadata.annotations[*]", "spec.template.spec.containers[*].image"}
	if got := reasonsOf(errs); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("reasonsOf = %v, want %v", got, want)
	}
}

// countingLive counts the CephCluster lookups a handler makes.
type countingLive struct {
	staticLive
	n int
}

func (c *countingLive) CephClusterLive(ctx context.Context, ns string, ref metav1.OwnerReference) (bool, error) {
	c.n++
	return c.staticLive.CephClusterLive(ctx, ns, ref)
}

// TestOneOwnerLookupPerRequest: an update of a Rook-owned Deployment, whose
// old and new object name the same CephCluster, asks the API server once.
func TestOneOwnerLookupPerRequest(t *testing.T) {
	old := completedMgr(t)
	old.OwnerReferences = []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: "rook-ceph", UID: liveCephClusterUID}}
	d := old.DeepCopy()
	d.Labels["team"] = "storage"
	cl := &countingLive{staticLive: live}
	h := &admission.Webhook{Handler: &Validator{Clusters: clusters, Live: cl, Policy: policy.Static(mutate.DefaultPolicy())}}
	resp := h.Handle(t.Context(), request(admissionv1.Update, must(json.Marshal(d)), must(json.Marshal(old))))
	if !resp.Allowed || cl.n != 1 {
		t.Errorf("allowed %v after %d CephCluster lookups; want allowed after 1", resp.Allowed, cl.n)
	}
}

// failingLive is an API server that cannot be asked.
type failingLive struct{ staticLive }

func (failingLive) CephClusterLive(context.Context, string, metav1.OwnerReference) (bool, error) {
	return false, errors.New("the API server did not answer")
}

// TestOwnerLookupNeverBlocksCleanup: with the CephCluster lookup failing, a
// Rook-owned Deployment's finalizer and status writes pass both handlers
// unchanged, while a spec change is refused on metadata.ownerReferences
// rather than trusted: the mutator judges in the same call.
func TestOwnerLookupNeverBlocksCleanup(t *testing.T) {
	old := completedMgr(t)
	old.OwnerReferences = []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: "rook-ceph", UID: liveCephClusterUID}}
	handlers := map[string]*admission.Webhook{
		"mutator":   {Handler: &Mutator{Clusters: clusters, Live: failingLive{}, Policy: policy.Static(mutate.DefaultPolicy())}},
		"validator": {Handler: &Validator{Clusters: clusters, Live: failingLive{}, Policy: policy.Static(mutate.DefaultPolicy())}},
	}
	for name, tc := range map[string]struct {
		edit  func(d *appsv1.Deployment)
		allow bool
	}{
		"finalizer removed": {func(d *appsv1.Deployment) { d.Finalizers = nil }, true},
		"status annotation": {func(d *appsv1.Deployment) {
			metav1.SetMetaDataAnnotation(&d.ObjectMeta, contract.AnnotationBootstrapStatus, "{}")
		}, true},
		"spec change": {func(d *appsv1.Deployment) { d.Spec.Replicas = ptrTo[int32](0) }, false},
	} {
		t.Run(name, func(t *testing.T) {
			d := old.DeepCopy()
			tc.edit(d)
			req := request(admissionv1.Update, must(json.Marshal(d)), must(json.Marshal(old)))
			for hn, h := range handlers {
				resp := h.Handle(t.Context(), req)
				if resp.Allowed != tc.allow || len(resp.Patch) != 0 {
					t.Fatalf("%s: allowed %v (want %v), patch %s: %v", hn, resp.Allowed, tc.allow, resp.Patch, resp.Result)
				}
				if !tc.allow && !strings.Contains(resp.Result.Message, "metadata.ownerReferences") {
					t.Errorf("%s: denial %q does not name metadata.ownerReferences", hn, resp.Result.Message)
				}
			}
		})
	}
}

// TestOnlyRookWritesItsMgrs: a mgr Deployment with a CephCluster owner is
// Rook's to write. Rook's operator (the policy's, renamed too) and
// system:masters create and change it unjudged and untouched; anyone else
// is refused on the owner reference when creating one, giving a mgr one, or
// changing the pods it runs, live owner or forged, through both handlers;
// labels, annotations, replicas and a rollout restart stay writable, and an
// exempt Deployment is not asked.
func TestOnlyRookWritesItsMgrs(t *testing.T) {
	const (
		rook   = "system:serviceaccount:rook-ceph:rook-ceph-system"
		editor = "alice"
	)
	liveOwner := []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: "rook-ceph", UID: liveCephClusterUID}}
	forged := []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: "rook-ceph", UID: "forged"}}
	privileged := func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptrTo(true)}
	}
	renamed := mutate.DefaultPolicy()
	renamed.Rook.OperatorNamespace, renamed.Rook.OperatorServiceAccount = "rook-system", "rook-operator"
	exempting := mutate.DefaultPolicy()
	exempting.Exemptions = []mutate.Exemption{{Namespace: "rook-ceph", Names: []string{"rook-ceph-mgr-a"}}}
	type verdict int
	const (
		untouched verdict = iota // allowed, no patch
		judged                   // the policy's verdict: refused for privileged
		refused                  // refused on the owner reference
		hidden                   // refused on label app: a mgr no selector sees
	)
	cases := map[string]struct {
		user   string
		groups []string
		policy *mutate.Policy
		old    func(d *appsv1.Deployment) // nil: a create
		edit   func(d *appsv1.Deployment)
		want   verdict
	}{
		"Rook creates its mgr":                 {user: rook, edit: func(d *appsv1.Deployment) { d.OwnerReferences = liveOwner; privileged(d) }, want: untouched},
		"a renamed Rook creates its mgr":       {user: "system:serviceaccount:rook-system:rook-operator", policy: renamed, edit: func(d *appsv1.Deployment) { d.OwnerReferences = liveOwner; privileged(d) }, want: untouched},
		"the default Rook under a renamed one": {user: rook, policy: renamed, edit: func(d *appsv1.Deployment) { d.OwnerReferences = liveOwner; privileged(d) }, want: refused},
		"system:masters creates Rook's mgr":    {user: "admin", groups: []string{"system:masters", "system:authenticated"}, edit: func(d *appsv1.Deployment) { d.OwnerReferences = liveOwner; privileged(d) }, want: untouched},
		"Rook with a forged owner is judged":   {user: rook, edit: func(d *appsv1.Deployment) { d.OwnerReferences = forged; privileged(d) }, want: judged},
		"an editor creates one, live owner":    {user: editor, edit: func(d *appsv1.Deployment) { d.OwnerReferences = liveOwner }, want: refused},
		"an editor creates one, forged owner":  {user: editor, edit: func(d *appsv1.Deployment) { d.OwnerReferences = forged }, want: refused},
		"an editor creates one, owner on a template-only mgr": {user: editor, edit: func(d *appsv1.Deployment) {
			d.OwnerReferences = liveOwner
			d.Labels["app"] = "web"
		}, want: hidden},
		"an editor creates one, exempt": {user: editor, policy: exempting, edit: func(d *appsv1.Deployment) { d.OwnerReferences = liveOwner; privileged(d) }, want: untouched},
		"an editor gives a mgr a live owner": {user: editor, old: func(d *appsv1.Deployment) {},
			edit: func(d *appsv1.Deployment) { d.OwnerReferences = liveOwner; d.Labels["team"] = "x" }, want: refused},
		"an editor changes Rook's mgr's image": {user: editor, old: func(d *appsv1.Deployment) { d.OwnerReferences = liveOwner },
			edit: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "registry.example.com/evil:1" }, want: refused},
		"an editor changes Rook's mgr's pod labels": {user: editor, old: func(d *appsv1.Deployment) { d.OwnerReferences = liveOwner },
			edit: func(d *appsv1.Deployment) { d.Spec.Template.Labels["team"] = "x" }, want: refused},
		"an editor labels Rook's mgr": {user: editor, old: func(d *appsv1.Deployment) { d.OwnerReferences = liveOwner },
			edit: func(d *appsv1.Deployment) {
				d.Labels["team"] = "x"
				metav1.SetMetaDataAnnotation(&d.ObjectMeta, "note", "x")
			}, want: untouched},
		"an editor scales Rook's mgr": {user: editor, old: func(d *appsv1.Deployment) { d.OwnerReferences = liveOwner },
			edit: func(d *appsv1.Deployment) { d.Spec.Replicas = ptrTo[int32](0) }, want: untouched},
		"an editor restarts Rook's mgr": {user: editor, old: func(d *appsv1.Deployment) { d.OwnerReferences = liveOwner },
			edit: func(d *appsv1.Deployment) {
				metav1.SetMetaDataAnnotation(&d.Spec.Template.ObjectMeta, contract.AnnotationRestartedAt, "2026-12-06T09:00:00Z")
			}, want: untouched},
		"Rook changes its mgr's image": {user: rook, old: func(d *appsv1.Deployment) { d.OwnerReferences = liveOwner },
			edit: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Image = "quay.io/ceph/ceph:v19.2.3"
				privileged(d)
			}, want: untouched},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := tc.policy
			if p == nil {
				p = mutate.DefaultPolicy()
			}
			base := completedMgr(t)
			var req admission.Request
			d := base.DeepCopy()
			if tc.old == nil {
				tc.edit(d)
				req = request(admissionv1.Create, must(json.Marshal(d)), nil)
			} else {
				tc.old(base)
				d = base.DeepCopy()
				tc.edit(d)
				req = request(admissionv1.Update, must(json.Marshal(d)), must(json.Marshal(base)))
			}
			req.UserInfo = authenticationv1.UserInfo{Username: tc.user, Groups: tc.groups}
			for hn, h := range map[string]*admission.Webhook{"mutator": newMutator(t, p), "validator": newValidator(t, p)} {
				resp := h.Handle(t.Context(), req)
				msg := ""
				if resp.Result != nil {
					msg = resp.Result.Message
				}
				switch tc.want {
				case untouched:
					if !resp.Allowed || len(resp.Patches) != 0 {
						t.Errorf("%s: allowed %v, %d patches: %s; want allowed untouched", hn, resp.Allowed, len(resp.Patches), msg)
					}
				case judged:
					if resp.Allowed || !strings.Contains(msg, "privileged") || strings.Contains(msg, "ownerReferences") {
						t.Errorf("%s: allowed %v: %s; want the policy's denial of privileged", hn, resp.Allowed, msg)
					}
				case hidden:
					if resp.Allowed || !strings.Contains(msg, "metadata.labels[app]: Required value") {
						t.Errorf("%s: allowed %v: %s; want a denial naming label app", hn, resp.Allowed, msg)
					}
				case refused:
					if resp.Allowed || !strings.Contains(msg, "metadata.ownerReferences[0]: Forbidden: only Rook's operator ("+p.RookOperator()+")") ||
						!strings.Contains(msg, "remove this owner reference") {
						t.Errorf("%s: allowed %v: %s; want a denial naming the owner reference, Rook's operator and the fix", hn, resp.Allowed, msg)
					}
				}
			}
		})
	}
}

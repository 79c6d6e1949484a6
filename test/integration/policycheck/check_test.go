// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package policycheck tests the shipped ValidatingAdmissionPolicy mgr-policy
// (manifests/base/policy/check.yaml) on a real API server with no webhook
// in the path: the bad-spec corpus gets the verdict Go's validation gives,
// and an update is judged by what it changes.
package policycheck

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/internal/harness/badspec"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

const ns = "rook-ceph"

var (
	root string
	k8s  client.Client
	api  *testenv.APIServer
	info = mutate.ClusterInfo{Namespace: ns, FSID: "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b"}
)

func TestMain(m *testing.M) { testenv.Main(m, "policycheck", run) }

func run(m *testing.M) (int, error) {
	var err error
	if root, err = testenv.RepoRoot(); err != nil {
		return 1, err
	}
	crd, err := testenv.MgrPolicyCRD()
	if err != nil {
		return 1, err
	}
	// No webhook: the API server's own admission alone.
	api, err = testenv.StartAPIServerWith(testenv.APIServerOptions{
		CRDs: []string{crd},
	})
	if err != nil {
		return 1, err
	}
	defer api.Stop()
	scheme, err := testenv.PolicyScheme()
	if err != nil {
		return 1, err
	}
	if k8s, err = client.New(api.Config, client.Options{Scheme: scheme}); err != nil {
		return 1, err
	}
	ctx := context.Background()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return 1, err
	}
	// The release's RBAC and admission policies, as `kubectl apply -k
	// manifests/base` creates them.
	if _, err := testenv.ApplyRBAC(ctx, k8s, filepath.Join(root, "manifests", "base")); err != nil {
		return 1, err
	}
	// The controller's policy Watcher, as its ServiceAccount: it accepts a
	// MgrPolicy into status.enforced, which the admission policy reads.
	if err := testenv.AcceptPolicies(ctx, api); err != nil {
		return 1, err
	}
	return m.Run(), nil
}

// completed is the shipped example as the webhook completes it.
func completed(t *testing.T) *appsv1.Deployment { t.Helper(); return completedMgr(t, "a") }

// completedMgr is the shipped example of mgr id, completed.
func completedMgr(t *testing.T, id string) *appsv1.Deployment {
	t.Helper()
	data, err := testenv.MinimalMgr(root, ns, id, [2]int32{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(data, d); err != nil {
		t.Fatal(err)
	}
	res, errs := mutate.Complete(d, info, mutate.DefaultPolicy())
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return res.Deployment
}

// setPolicy makes spec (JSON) MgrPolicy default's spec, accepted by the
// controller, and returns the policy Go reads from it.
func setPolicy(t *testing.T, spec []byte) *mutate.Policy {
	t.Helper()
	var ps mutate.PolicySpec
	if err := json.Unmarshal(spec, &ps); err != nil {
		t.Fatal(err)
	}
	p, err := testenv.SetMgrPolicy(context.Background(), k8s, ps)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// vapVerdict creates d (a server dry run) and returns the denial, if any.
func vapVerdict(d *appsv1.Deployment) error {
	return k8s.Create(context.Background(), d.DeepCopy(), client.DryRunAll)
}

var index = regexp.MustCompile(`\[[^]]*\]`)

// fieldOf is the field a ValidatingAdmissionPolicy message names (its
// messages start "<field>: ").
func fieldOf(err error) string {
	msg := err.Error()
	if _, after, ok := strings.Cut(msg, "denied request: "); ok {
		msg = after
	}
	f, _, _ := strings.Cut(msg, ":")
	return f
}

// TestCorpusVerdicts sends every case of the bad-spec corpus through Go's
// validation and, on the real API server, through the shipped policy: the
// same verdict, and the denial names the field (without Go's indices); a
// webhook-only case is admitted by the policy and refused by Go.
func TestCorpusVerdicts(t *testing.T) {
	cases, err := badspec.Load(filepath.Join(root, "mutate", "testdata", "badspec", "violations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// By policy, so that each MgrPolicy is set once.
	groups, order := map[string][]badspec.Case{}, []string{}
	for _, c := range cases {
		key := string(c.PolicyJSON())
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], c)
	}
	webhookOnly := 0
	for _, key := range order {
		p := setPolicy(t, []byte(key))
		for _, tc := range groups[key] {
			t.Run(tc.Name, func(t *testing.T) {
				d, err := tc.Apply(completed(t))
				if err != nil {
					t.Fatal(err)
				}
				goDenied := len(p.Judge(mutate.Validate(d, info, p)).Deny) > 0
				wantVAP := goDenied && tc.WebhookOnly == ""
				if tc.WebhookOnly != "" {
					webhookOnly++
					if !goDenied {
						t.Fatalf("webhook-only case admitted by Go: %s", tc.WebhookOnly)
					}
				}
				// The API server reads a MgrPolicy change from its
				// informer: every case polls for its verdict, so none
				// depends on how soon that happens (only a wrong verdict
				// waits the whole timeout).
				var got error
				if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
					got = vapVerdict(d)
					return (got != nil) == wantVAP, nil
				}); err != nil {
					t.Fatalf("Go denies: %v; the policy: %v", goDenied, got)
				}
				if got == nil {
					return
				}
				if !strings.Contains(got.Error(), "ValidatingAdmissionPolicy 'mgr-policy'") {
					t.Logf("refused by the API server's own validation: %v", got)
					return
				}
				if !apierrors.IsInvalid(got) {
					t.Errorf("denial is not Invalid (422): %v", got)
				}
				vf, gf := index.ReplaceAllString(fieldOf(got), ""), index.ReplaceAllString(tc.Field, "")
				if vf == "" || !strings.HasPrefix(gf, vf) {
					t.Errorf("the policy's denial names %q, Go's %q: %v", fieldOf(got), tc.Field, got)
				}
			})
		}
	}
	t.Logf("%d cases, %d judged by the webhook only", len(cases), webhookOnly)
}

// TestUpdatesJudgedByWhatTheyChange: a mgr the policy has since tightened
// against (Squid under a minimum of 20) stays writable, its cleanup never
// judged; an update that introduces a violation, or changes what never
// changes, is refused.
func TestUpdatesJudgedByWhatTheyChange(t *testing.T) {
	ctx := t.Context()
	squid := func(d *appsv1.Deployment) {
		for _, cs := range [][]corev1.Container{d.Spec.Template.Spec.Containers, d.Spec.Template.Spec.InitContainers} {
			for i := range cs {
				cs[i].Image = "quay.io/ceph/ceph:v19.2.7"
			}
		}
	}
	old := completed(t)
	squid(old)
	setPolicy(t, []byte(`{}`))
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		return k8s.Create(ctx, old.DeepCopy()) == nil, nil
	}); err != nil {
		t.Fatalf("a Squid mgr under the built-in policy: %v", k8s.Create(ctx, old.DeepCopy()))
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(old), old); err != nil {
		t.Fatal(err)
	}
	setPolicy(t, []byte(`{"images": {"minimumCephVersion": "20.0.0"}}`))
	another := completed(t)
	squid(another)
	another.Name, another.Labels["mgr"] = "rook-ceph-mgr-b", "b"
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		return vapVerdict(another) != nil, nil
	}); err != nil {
		t.Fatal("a new Squid mgr is admitted under a minimum of 20")
	}

	for name, tc := range map[string]struct {
		edit  func(d *appsv1.Deployment)
		field string // "": admitted
	}{
		"a label": {func(d *appsv1.Deployment) { d.Labels["team"] = "storage" }, ""},
		"the controller's status": {func(d *appsv1.Deployment) {
			metav1.SetMetaDataAnnotation(&d.ObjectMeta, "mgr.ceph.rook.io/bootstrap-status", "{}")
		}, ""},
		"a finalizer": {func(d *appsv1.Deployment) { d.Finalizers = append(d.Finalizers, "mgr.ceph.rook.io/cephx-key") }, ""},
		"an env var, same image": {func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "X", Value: "1"})
		}, ""},
		"another old image": {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "quay.io/ceph/ceph:v19.2.6" }, "spec.template.spec.containers[mgr].image"},
		"two replicas":      {func(d *appsv1.Deployment) { d.Spec.Replicas = ptr(int32(2)) }, "spec.replicas"},
		"privileged": {func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
		}, "spec.template.spec.containers[mgr].securityContext.privileged"},
		"label app removed": {func(d *appsv1.Deployment) { delete(d.Labels, "app") }, "metadata.labels[app]"},
		"another mgr id":    {func(d *appsv1.Deployment) { d.Labels["mgr"] = "c" }, "metadata.labels[mgr]"},
		"another fsid": {func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Args[0] = "--fsid=47913c99-d1ed-4a9b-bd55-2b49490b1229"
		}, "spec.template.spec.containers[mgr].args"},
		"the opt-out label":   {func(d *appsv1.Deployment) { d.Labels["mgr.ceph.rook.io/managed"] = "false" }, "metadata.labels[mgr.ceph.rook.io/managed]"},
		"a Rook owner forged": {func(d *appsv1.Deployment) { d.OwnerReferences = rookOwner(); d.Spec.Replicas = ptr(int32(3)) }, "spec.replicas"},
	} {
		t.Run(name, func(t *testing.T) {
			d := old.DeepCopy()
			tc.edit(d)
			err := k8s.Update(ctx, d, client.DryRunAll)
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.field != "" && err == nil:
				t.Fatalf("admitted; want a denial naming %s", tc.field)
			case tc.field != "" && fieldOf(err) != tc.field:
				t.Fatalf("denial names %q, want %s: %v", fieldOf(err), tc.field, err)
			}
		})
	}
	if err := k8s.Delete(ctx, old); err != nil {
		t.Fatalf("deleting the old mgr: %v", err)
	}
}

// rookOwner is an owner reference to a CephCluster (one that does not exist).
func rookOwner() []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: "rook-ceph", UID: "0b5e2d1c-9a4f-4e0b-8c3a-1f2e3d4c5b6a"}}
}

func ptr[T any](v T) *T { return &v }

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package manifestrules

import (
	"context"
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	celplugin "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/namespace"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/object"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// conditions compiles matchConditions as the API server does.
var conditions = celplugin.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))

// request is one admission request.
type request struct {
	op admission.Operation
	// ns is the request's namespace; own stands for the install's.
	ns       string
	resource string // resource[/subresource], see kinds
	name     string
	old, obj runtime.Object
	user     string
}

const own = "<install namespace>"

// kinds: the resource and kind of each resource a request may name.
var kinds = map[string]struct {
	gvr schema.GroupVersionResource
	gvk schema.GroupVersionKind
}{
	"deployments":                     {appsv1.SchemeGroupVersion.WithResource("deployments"), appsv1.SchemeGroupVersion.WithKind("Deployment")},
	"deployments/scale":               {appsv1.SchemeGroupVersion.WithResource("deployments"), autoscalingv1.SchemeGroupVersion.WithKind("Scale")},
	"pods":                            {corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod")},
	"services":                        {corev1.SchemeGroupVersion.WithResource("services"), corev1.SchemeGroupVersion.WithKind("Service")},
	"secrets":                         {corev1.SchemeGroupVersion.WithResource("secrets"), corev1.SchemeGroupVersion.WithKind("Secret")},
	"configmaps":                      {corev1.SchemeGroupVersion.WithResource("configmaps"), corev1.SchemeGroupVersion.WithKind("ConfigMap")},
	"poddisruptionbudgets":            {schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}, schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}},
	"reports":                         {schema.GroupVersionResource{Group: "openreports.io", Version: "v1alpha1", Resource: "reports"}, schema.GroupVersionKind{Group: "openreports.io", Version: "v1alpha1", Kind: "Report"}},
	"mutatingwebhookconfigurations":   {admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations"), admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration")},
	"validatingwebhookconfigurations": {admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"), admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration")},
}

// reaches reports whether the API server sends r to the webhook (or the
// policy, as a webhook with its match constraints): the steps of
// k8s.io/apiserver's dispatcher (generic.Webhook.ShouldCallHook), each by
// its own matcher. A matchCondition that fails to evaluate fails the test.
func reaches(t *testing.T, in install, h webhook.WebhookAccessor, r request) bool {
	t.Helper()
	ns := r.ns
	if ns == own {
		ns = in.ns
	}
	k, ok := kinds[r.resource]
	if !ok {
		t.Fatalf("no kind for resource %s", r.resource)
	}
	_, sub, _ := strings.Cut(r.resource, "/")
	var userInfo user.Info = &user.DefaultInfo{Name: r.user}
	attr := admission.NewAttributesRecord(r.obj, r.old, k.gvk, ns, r.name, k.gvr, sub, r.op, nil, false, userInfo)
	namespaces := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if ns != "" {
		if err := namespaces.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{corev1.LabelMetadataName: ns}}}); err != nil {
			t.Fatal(err)
		}
	}
	nsm := &namespace.Matcher{NamespaceLister: corelisters.NewNamespaceLister(namespaces)}
	if ok, err := nsm.MatchNamespaceSelector(h, attr); err != nil {
		t.Fatalf("%s: namespaceSelector: %v", h.GetName(), err)
	} else if !ok {
		return false
	}
	if ok, err := (&object.Matcher{}).MatchObjectSelector(h, attr); err != nil {
		t.Fatalf("%s: objectSelector: %v", h.GetName(), err)
	} else if !ok {
		return false
	}
	ruled := false
	for _, rule := range h.GetRules() {
		ruled = ruled || (&rules.Matcher{Rule: rule, Attr: attr}).Matches()
	}
	if !ruled {
		return false
	}
	if len(h.GetMatchConditions()) == 0 {
		return true
	}
	versioned := &admission.VersionedAttributes{
		Attributes:         attr,
		VersionedKind:      k.gvk,
		VersionedObject:    admission.NewLazyObject(r.obj),
		VersionedOldObject: admission.NewLazyObject(r.old),
	}
	res := h.GetCompiledMatcher(conditions).Match(context.Background(), versioned, nil, nil)
	if res.Error != nil {
		t.Fatalf("%s: matchConditions fail to evaluate (the API server would refuse the request): %v", h.GetName(), res.Error)
	}
	return res.Matches
}

// hooks are the install's webhooks and admission policies by name, each as
// the API server matches it. A policy's match constraints are a webhook's
// rules and selectors; a selector left out selects everything, as the API
// server defaults it.
func hooks(t *testing.T, in install) map[string]webhook.WebhookAccessor {
	t.Helper()
	all := map[string]webhook.WebhookAccessor{}
	for _, o := range in.objs {
		switch o.GetKind() {
		case "MutatingWebhookConfiguration":
			c := &admissionregistrationv1.MutatingWebhookConfiguration{}
			convert(t, o.Object, c)
			for i := range c.Webhooks {
				w := &c.Webhooks[i]
				w.NamespaceSelector, w.ObjectSelector = orEverything(w.NamespaceSelector), orEverything(w.ObjectSelector)
				all[w.Name] = webhook.NewMutatingWebhookAccessor(w.Name, c.Name, w)
			}
		case "ValidatingWebhookConfiguration":
			c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			convert(t, o.Object, c)
			for i := range c.Webhooks {
				w := &c.Webhooks[i]
				w.NamespaceSelector, w.ObjectSelector = orEverything(w.NamespaceSelector), orEverything(w.ObjectSelector)
				all[w.Name] = webhook.NewValidatingWebhookAccessor(w.Name, c.Name, w)
			}
		case "ValidatingAdmissionPolicy":
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			convert(t, o.Object, p)
			mc := p.Spec.MatchConstraints
			if mc == nil {
				t.Fatalf("ValidatingAdmissionPolicy %s has no matchConstraints", p.Name)
			}
			h := &admissionregistrationv1.ValidatingWebhook{
				Name:              p.Name,
				NamespaceSelector: orEverything(mc.NamespaceSelector),
				ObjectSelector:    orEverything(mc.ObjectSelector),
				MatchPolicy:       mc.MatchPolicy,
				MatchConditions:   p.Spec.MatchConditions,
			}
			for _, rr := range mc.ResourceRules {
				if len(rr.ResourceNames) > 0 {
					t.Fatalf("policy %s: resourceNames in matchConstraints are not judged here", p.Name)
				}
				h.Rules = append(h.Rules, rr.RuleWithOperations)
			}
			all[p.Name] = webhook.NewValidatingWebhookAccessor(p.Name, p.Name, h)
		}
	}
	return all
}

func orEverything(s *metav1.LabelSelector) *metav1.LabelSelector {
	if s == nil {
		return &metav1.LabelSelector{}
	}
	return s
}

func convert(t *testing.T, u map[string]any, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, into); err != nil {
		t.Fatal(err)
	}
}

// mgr is a mgr Deployment as a user writes it, changed by each edit.
func mgr(edits ...func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "rook-ceph-mgr-a", Namespace: "rook-ceph",
			Labels:      map[string]string{"app": "rook-ceph-mgr", "rook_cluster": "rook-ceph"},
			Annotations: map[string]string{"team": "storage"},
		},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
	}
	for _, e := range edits {
		e(d)
	}
	return d
}

func labels(kv map[string]string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Labels = kv }
}

func template(kv map[string]string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Template.Labels = kv }
}

func annotations(kv map[string]string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Annotations = kv }
}

func scale(name string, replicas *int32) *autoscalingv1.Scale {
	s := &autoscalingv1.Scale{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "rook-ceph"},
	}
	if replicas != nil {
		s.Spec.Replicas = *replicas
	}
	return s
}

const (
	statusAnnotation   = "mgr.ceph.rook.io/bootstrap-status"
	revisionAnnotation = "deployment.kubernetes.io/revision"
)

// mgrWrites: which mgr Deployment writes the mutating webhook sees, and
// mgr-policy with it (it judges the final object of the same requests).
// want is the answer in a namespace the install serves.
var mgrWrites = map[string]struct {
	r    request
	want bool
}{
	"create a mgr":                             {request{op: admission.Create, ns: "rook-ceph", resource: "deployments", obj: mgr()}, true},
	"create a mgr in kube-system":              {request{op: admission.Create, ns: "kube-system", resource: "deployments", obj: mgr()}, false},
	"create a mgr in the install's namespace":  {request{op: admission.Create, ns: own, resource: "deployments", obj: mgr()}, false},
	"create a mgr in kube-system-2 (a prefix)": {request{op: admission.Create, ns: "kube-system-2", resource: "deployments", obj: mgr()}, true},
	"create another app's Deployment":          {request{op: admission.Create, ns: "rook-ceph", resource: "deployments", obj: mgr(labels(map[string]string{"app": "rook-ceph-mgr-proxy"}))}, false},
	"create an unlabelled Deployment":          {request{op: admission.Create, ns: "rook-ceph", resource: "deployments", obj: mgr(labels(nil))}, false},
	"create a Deployment that runs a mgr from its template only": {request{op: admission.Create, ns: "rook-ceph", resource: "deployments",
		obj: mgr(labels(map[string]string{"team": "storage"}), template(map[string]string{"app": "rook-ceph-mgr", "mgr": "a"}))}, true},
	"create a Deployment whose template is another app's": {request{op: admission.Create, ns: "rook-ceph", resource: "deployments",
		obj: mgr(labels(nil), template(map[string]string{"app": "rook-ceph-mgr-proxy"}))}, false},
	"move the mgr label from the Deployment to its template": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments", old: mgr(),
		obj: mgr(labels(nil), template(map[string]string{"app": "rook-ceph-mgr"}))}, true},
	"create a Pod labelled as a mgr": {request{op: admission.Create, ns: "rook-ceph", resource: "pods", obj: &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "rook-ceph", Labels: map[string]string{"app": "rook-ceph-mgr"}}}}, false},
	"delete a mgr": {request{op: admission.Delete, ns: "rook-ceph", resource: "deployments", old: mgr()}, false},
	"update the spec": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments", old: mgr(),
		obj: mgr(func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](3) })}, true},
	"update nothing": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments", old: mgr(), obj: mgr()}, false},
	"update only the status": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments", old: mgr(),
		obj: mgr(func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 1 })}, false},
	"update only the finalizers": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments", old: mgr(),
		obj: mgr(func(d *appsv1.Deployment) { d.Finalizers = []string{"mgr.ceph.rook.io/cephx-key"} })}, false},
	"add a label": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments", old: mgr(),
		obj: mgr(labels(map[string]string{"app": "rook-ceph-mgr", "rook_cluster": "rook-ceph", "mgr.ceph.rook.io/exempt": "true"}))}, true},
	"remove a label": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments", old: mgr(),
		obj: mgr(labels(map[string]string{"app": "rook-ceph-mgr"}))}, true},
	"leave the mgr set (remove app)": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments", old: mgr(),
		obj: mgr(labels(map[string]string{"rook_cluster": "rook-ceph"}))}, true},
	"leave the mgr set (remove every label)": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments", old: mgr(), obj: mgr(labels(nil))}, true},
	"join the mgr set":                       {request{op: admission.Update, ns: "rook-ceph", resource: "deployments", old: mgr(labels(nil)), obj: mgr()}, true},
	"add a user annotation to none":          {request{op: admission.Update, ns: "rook-ceph", resource: "deployments", old: mgr(annotations(nil)), obj: mgr()}, true},
	"add a user annotation": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments", old: mgr(),
		obj: mgr(annotations(map[string]string{"team": "storage", "owner": "ops"}))}, true},
	"change a user annotation": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments", old: mgr(),
		obj: mgr(annotations(map[string]string{"team": "ops"}))}, true},
	"remove a user annotation": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments",
		old: mgr(annotations(map[string]string{"team": "storage", "owner": "ops"})), obj: mgr()}, true},
	"remove the last annotation": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments", old: mgr(), obj: mgr(annotations(nil))}, true},
	"change only the status annotation": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments",
		old: mgr(annotations(map[string]string{"team": "storage", statusAnnotation: "1"})),
		obj: mgr(annotations(map[string]string{"team": "storage", statusAnnotation: "2"}))}, false},
	"add the status annotation to none": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments",
		old: mgr(annotations(nil)), obj: mgr(annotations(map[string]string{statusAnnotation: "1"}))}, false},
	"remove the status annotation": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments",
		old: mgr(annotations(map[string]string{"team": "storage", statusAnnotation: "1"})), obj: mgr()}, false},
	"change only the revision annotation": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments",
		old: mgr(annotations(map[string]string{"team": "storage", revisionAnnotation: "1"})),
		obj: mgr(annotations(map[string]string{"team": "storage", revisionAnnotation: "2"}))}, false},
	"remove the revision annotation": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments",
		old: mgr(annotations(map[string]string{"team": "storage", revisionAnnotation: "1"})), obj: mgr()}, false},
	"add the revision annotation": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments",
		old: mgr(), obj: mgr(annotations(map[string]string{"team": "storage", revisionAnnotation: "1"}))}, false},
	"change a user annotation beside the status annotation": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments",
		old: mgr(annotations(map[string]string{"team": "storage", statusAnnotation: "1"})),
		obj: mgr(annotations(map[string]string{"team": "ops", statusAnnotation: "2"}))}, true},
	"update a mgr being deleted": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments",
		old: mgr(func(d *appsv1.Deployment) {
			d.DeletionTimestamp = &metav1.Time{}
			d.Finalizers = []string{"mgr.ceph.rook.io/cephx-key"}
		}),
		obj: mgr(func(d *appsv1.Deployment) { d.DeletionTimestamp = &metav1.Time{}; d.Spec.Replicas = ptr.To[int32](0) })}, false},
	"scale a mgr": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments/scale", name: "rook-ceph-mgr-a",
		old: scale("rook-ceph-mgr-a", ptr.To[int32](1)), obj: scale("rook-ceph-mgr-a", ptr.To[int32](2))}, false},
}

// TestMgrWritesReachTheWebhookAndThePolicy: the mutating webhook and
// mgr-policy see exactly the mgr Deployment writes that change what the
// webhook judges; nothing else costs a call or can be blocked by an outage.
func TestMgrWritesReachTheWebhookAndThePolicy(t *testing.T) {
	eachInstall(t, func(t *testing.T, in install) {
		hs := hooks(t, in)
		for _, name := range []string{"mutate.mgr.ceph.rook.io", "mgr-policy"} {
			h, ok := hs[name]
			if !ok {
				t.Fatalf("%s is not installed", name)
			}
			for what, c := range mgrWrites {
				r := c.r
				r.name = "rook-ceph-mgr-a"
				want := c.want && in.serves(ns(r, in))
				if got := reaches(t, in, h, r); got != want {
					t.Errorf("%s: %s in %s: reached %v, want %v", name, what, ns(r, in), got, want)
				}
			}
		}
	})
}

func ns(r request, in install) string {
	if r.ns == own {
		return in.ns
	}
	return r.ns
}

// TestWorkloadWritesReachMgrWorkloads: mgr-workloads judges a Pod labelled
// as a mgr in every namespace the install serves, and in no other: a
// namespaced install's other namespaces hold no mgr key to read and no
// Service of the install selects their pods, so a rule there would cost
// every Pod write of the cluster and guard nothing.
func TestWorkloadWritesReachMgrWorkloads(t *testing.T) {
	eachInstall(t, func(t *testing.T, in install) {
		h, ok := hooks(t, in)["mgr-workloads"]
		if !ok {
			t.Fatal("mgr-workloads is not installed")
		}
		for _, n := range []string{"rook-ceph", "ceph-b", "tenant", "kube-system", own} {
			r := request{op: admission.Create, ns: n, resource: "pods", name: "p", obj: &corev1.Pod{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns(request{ns: n}, in), Labels: map[string]string{"app": "rook-ceph-mgr", "mgr": "a"}}}}
			if got, want := reaches(t, in, h, r), in.serves(ns(r, in)); got != want {
				t.Errorf("a mgr-labelled Pod created in %s: reached mgr-workloads %v, want %v", ns(r, in), got, want)
			}
		}
	})
}

// TestScaleReachesTheScaleWebhook: the scale webhook sees a mgr's scale
// subresource scaled past one replica, and nothing else.
func TestScaleReachesTheScaleWebhook(t *testing.T) {
	scaleTo := func(ns, name string, replicas *int32) request {
		return request{op: admission.Update, ns: ns, resource: "deployments/scale", name: name,
			old: scale(name, ptr.To[int32](1)), obj: scale(name, replicas)}
	}
	cases := map[string]struct {
		r    request
		want bool
	}{
		"a mgr to 2":                        {scaleTo("rook-ceph", "rook-ceph-mgr-a", ptr.To[int32](2)), true},
		"a mgr to 3":                        {scaleTo("rook-ceph", "rook-ceph-mgr-a", ptr.To[int32](3)), true},
		"a mgr to 1":                        {scaleTo("rook-ceph", "rook-ceph-mgr-a", ptr.To[int32](1)), false},
		"a mgr to 0":                        {scaleTo("rook-ceph", "rook-ceph-mgr-a", nil), false},
		"rook-ceph-mgr- (the bare prefix)":  {scaleTo("rook-ceph", "rook-ceph-mgr-", ptr.To[int32](2)), true},
		"rook-ceph-mgr (no dash)":           {scaleTo("rook-ceph", "rook-ceph-mgr", ptr.To[int32](2)), false},
		"rook-ceph-mgrx-a":                  {scaleTo("rook-ceph", "rook-ceph-mgrx-a", ptr.To[int32](2)), false},
		"x-rook-ceph-mgr-a":                 {scaleTo("rook-ceph", "x-rook-ceph-mgr-a", ptr.To[int32](2)), false},
		"a mgr in kube-system":              {scaleTo("kube-system", "rook-ceph-mgr-a", ptr.To[int32](2)), false},
		"a mgr in the install's namespace":  {scaleTo(own, "rook-ceph-mgr-a", ptr.To[int32](2)), false},
		"a mgr in kube-system-2 (a prefix)": {scaleTo("kube-system-2", "rook-ceph-mgr-a", ptr.To[int32](2)), true},
		"a mgr's Deployment to 2, not its scale": {request{op: admission.Update, ns: "rook-ceph", resource: "deployments", name: "rook-ceph-mgr-a",
			old: mgr(), obj: mgr(func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](2) })}, false},
	}
	eachInstall(t, func(t *testing.T, in install) {
		h, ok := hooks(t, in)["scale.mgr.ceph.rook.io"]
		if !ok {
			t.Fatal("scale.mgr.ceph.rook.io is not installed")
		}
		for what, c := range cases {
			want := c.want && in.serves(ns(c.r, in))
			if got := reaches(t, in, h, c.r); got != want {
				t.Errorf("scale %s in %s: reached %v, want %v", what, ns(c.r, in), got, want)
			}
		}
	})
}

// TestConfinementMatchesOnlyItsComponent: each confinement policy judges
// every write of its component's ServiceAccount, exactly as the install
// names it (relocated installs included), to every resource it confines, and
// no one else's write: not a ServiceAccount of the same name elsewhere, nor
// one whose name merely ends like it.
func TestConfinementMatchesOnlyItsComponent(t *testing.T) {
	confined := map[string]struct {
		sa        string
		resources []string
	}{
		"mgr-bootstrap-confinement": {"mgr-bootstrap", []string{"pods", "services", "secrets", "deployments", "poddisruptionbudgets", "reports"}},
		"mgr-webhook-confinement":   {"mgr-webhook", []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"}},
	}
	eachInstall(t, func(t *testing.T, in install) {
		hs := hooks(t, in)
		for policy, c := range confined {
			h, ok := hs[policy]
			if !ok {
				t.Fatalf("%s is not installed", policy)
			}
			users := map[string]bool{
				"system:serviceaccount:" + in.ns + ":" + c.sa:        true,
				"system:serviceaccount:elsewhere:" + c.sa:            false,
				"system:serviceaccount:" + in.ns + ":x-" + c.sa:      false,
				"system:serviceaccount:" + in.ns + ":" + c.sa + "-2": false,
				"system:serviceaccount:" + in.ns + ":not-" + c.sa:    false,
				"system:serviceaccounts:" + in.ns + ":" + c.sa:       false,
				c.sa: false,
				"system:serviceaccount:" + in.ns + ":mgr-other":           false,
				"system:serviceaccount:" + c.sa + ":default":              false,
				"system:serviceaccount:kube-system:replicaset-controller": false,
			}
			for u, want := range users {
				for _, res := range c.resources {
					for _, op := range []admission.Operation{admission.Create, admission.Update, admission.Delete} {
						r := request{op: op, ns: "rook-ceph", resource: res, name: "x", user: u}
						if strings.HasSuffix(res, "webhookconfigurations") {
							r.ns = ""
						}
						if got := reaches(t, in, h, r); got != want {
							t.Errorf("%s: %s %s by %s: matched %v, want %v", policy, op, res, u, got, want)
						}
					}
				}
				// What it does not confine stays out of its way.
				r := request{op: admission.Create, ns: "rook-ceph", resource: "configmaps", name: "x", user: u}
				if reaches(t, in, h, r) {
					t.Errorf("%s: create configmaps by %s matched", policy, u)
				}
			}
		}
	})
}

// TestAdmissionFailsClosed: when the API server cannot reach the webhook or
// evaluate a confinement policy, the request is refused (an Ignore would let
// a mgr write past the policy, or a compromised component past its
// confinement). mgr-policy alone ignores its errors: it backs the webhook,
// which fails closed, and must not block every mgr write when the MgrPolicy
// API is missing.
func TestAdmissionFailsClosed(t *testing.T) {
	want := map[string]admissionregistrationv1.FailurePolicyType{
		"mutate.mgr.ceph.rook.io":   admissionregistrationv1.Fail,
		"scale.mgr.ceph.rook.io":    admissionregistrationv1.Fail,
		"mgr-bootstrap-confinement": admissionregistrationv1.Fail,
		"mgr-webhook-confinement":   admissionregistrationv1.Fail,
		"mgr-policy":                admissionregistrationv1.Ignore,
	}
	eachInstall(t, func(t *testing.T, in install) {
		got := map[string]admissionregistrationv1.FailurePolicyType{}
		for _, o := range in.objs {
			switch o.GetKind() {
			case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
				c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
				convert(t, o.Object, c)
				for _, w := range c.Webhooks {
					// The API server defaults a missing policy to Fail.
					got[w.Name] = ptr.Deref(w.FailurePolicy, admissionregistrationv1.Fail)
				}
			case "ValidatingAdmissionPolicy":
				p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
				convert(t, o.Object, p)
				got[p.Name] = ptr.Deref(p.Spec.FailurePolicy, admissionregistrationv1.Fail)
			}
		}
		for name, policy := range want {
			if got[name] != policy {
				t.Errorf("%s: failurePolicy %q, want %s", name, got[name], policy)
			}
		}
	})
}

// TestRenamedInstallStaysConfined: a kustomization that moves the install
// and prefixes its names (namespace: and namePrefix:, with the
// follow-namespace transformer as the README says) confines the renamed
// ServiceAccounts, not the names it started with.
func TestRenamedInstallStaysConfined(t *testing.T) {
	objs, err := kustomizeInCheckout("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: ceph-admission\nnamePrefix: site-\n" +
		"resources: [../manifests/overlays/self-signed]\ntransformers: [../manifests/follow-namespace]\n")
	if err != nil {
		t.Fatal(err)
	}
	in := install{name: "renamed", ns: "ceph-admission", objs: objs}
	hs := hooks(t, in)
	for policy, sa := range map[string]string{"site-mgr-bootstrap-confinement": "mgr-bootstrap", "site-mgr-webhook-confinement": "mgr-webhook"} {
		h, ok := hs[policy]
		if !ok {
			t.Fatalf("%s is not installed", policy)
		}
		if in.get("ServiceAccount", "site-"+sa) == nil {
			t.Fatalf("no ServiceAccount site-%s", sa)
		}
		res := "secrets"
		if sa == "mgr-webhook" {
			res = "mutatingwebhookconfigurations"
		}
		for u, want := range map[string]bool{
			"system:serviceaccount:ceph-admission:site-" + sa:     true,
			"system:serviceaccount:ceph-admission:" + sa:          false,
			"system:serviceaccount:mgr-webhook-system:" + sa:      false,
			"system:serviceaccount:mgr-webhook-system:site-" + sa: false,
		} {
			r := request{op: admission.Create, ns: "rook-ceph", resource: res, name: "x", user: u}
			if res != "secrets" {
				r.ns = ""
			}
			if got := reaches(t, in, h, r); got != want {
				t.Errorf("%s: a write by %s matched %v, want %v", policy, u, got, want)
			}
		}
	}
}

// TestHoldReleaseKeepsEverySpecField: mgr-bootstrap-confinement lets the
// controller change two things of a mgr Deployment's spec: paused, when it
// releases a rollout hold, and one annotation of the pod template, when it
// rotates the mgr's keys. Every other field of DeploymentSpec must be
// compared in those rules (variable sameSpecOtherwise, and the template in
// each), or a stolen controller token could change it in a release or a
// rotation. A field Kubernetes adds to DeploymentSpec fails this test until
// the rule compares it.
func TestHoldReleaseKeepsEverySpecField(t *testing.T) {
	eachInstall(t, func(t *testing.T, in install) {
		var rule string
		vars := map[string]string{}
		for _, o := range in.objs {
			if o.GetKind() != "ValidatingAdmissionPolicy" || !strings.HasSuffix(o.GetName(), "mgr-bootstrap-confinement") {
				continue
			}
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			convert(t, o.Object, p)
			for _, v := range p.Spec.Variables {
				vars[v.Name] = v.Expression
			}
			for _, v := range p.Spec.Validations {
				if strings.Contains(v.Expression, "variables.releasesHold") && strings.Contains(v.Expression, "'deployments'") {
					rule = v.Expression
				}
			}
		}
		if rule == "" {
			t.Fatal("no rule of mgr-bootstrap-confinement releases a hold on deployments")
		}
		for _, want := range []string{
			"variables.releasesHold && variables.sameSpecOtherwise && object.spec.template == oldObject.spec.template",
			"variables.rotatesKey && variables.sameSpecOtherwise",
		} {
			if !strings.Contains(rule, want) {
				t.Errorf("the Deployment rule lacks %q", want)
			}
		}
		others := vars["sameSpecOtherwise"]
		fields := reflect.TypeFor[appsv1.DeploymentSpec]()
		for i := range fields.NumField() {
			name, _, _ := strings.Cut(fields.Field(i).Tag.Get("json"), ",")
			if name == "paused" || name == "template" {
				continue
			}
			if !strings.Contains(others, "object.spec."+name+" ==") && !strings.Contains(others, "object.spec.?"+name+".orValue(") {
				t.Errorf("variable sameSpecOtherwise does not compare spec.%s", name)
			}
		}
		// A rotation changes one annotation of the template: its spec and
		// labels stay, and every other annotation.
		for _, want := range []string{"object.spec.template.spec == oldObject.spec.template.spec",
			"object.spec.template.?metadata.?labels.orValue({}) == oldObject.spec.template.?metadata.?labels.orValue({})",
			"variables.oldTemplateAnnotations.all(k, k in variables.newTemplateAnnotations)"} {
			if !strings.Contains(vars["rotatesKey"], want) {
				t.Errorf("variable rotatesKey lacks %q", want)
			}
		}
	})
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/policy"
)

// completedMgr is the shipped example, completed for rook-ceph.
func completedMgr(t *testing.T) *appsv1.Deployment {
	t.Helper()
	in := decode(t, must(yaml.YAMLToJSON(must(os.ReadFile("../manifests/examples/minimal-mgr.yaml")))))
	res, errs := mutate.Complete(in, clusters["rook-ceph"], mutate.DefaultPolicy())
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	res.Deployment.Finalizers = []string{contract.FinalizerCephxKey}
	return res.Deployment
}

// TestValidatorRatchets: under a policy tightened past the running image
// (minimum Ceph 20 for a v19 mgr), the old mgr stays writable on every field
// it does not make worse, and an update introducing a violation is refused.
func TestValidatorRatchets(t *testing.T) {
	tight := mutate.DefaultPolicy()
	tight.Images.MinimumCephVersion = "20.0.0"
	v := newValidator(t, tight)
	now := metav1.Now()
	cases := map[string]struct {
		edit      func(d *appsv1.Deployment)
		wantField string // "" when allowed
	}{
		"user label":      {func(d *appsv1.Deployment) { d.Labels["team"] = "storage" }, ""},
		"user annotation": {func(d *appsv1.Deployment) { metav1.SetMetaDataAnnotation(&d.ObjectMeta, "note", "x") }, ""},
		"status annotation": {func(d *appsv1.Deployment) {
			metav1.SetMetaDataAnnotation(&d.ObjectMeta, contract.AnnotationBootstrapStatus, "{}")
		}, ""},
		"finalizer removed":         {func(d *appsv1.Deployment) { d.Finalizers = nil }, ""},
		"being deleted":             {func(d *appsv1.Deployment) { d.DeletionTimestamp = &now; d.Labels["app"] = "x" }, ""},
		"scaled to 0":               {func(d *appsv1.Deployment) { d.Spec.Replicas = ptrTo[int32](0) }, ""},
		"image made older":          {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "quay.io/ceph/ceph:v19.2.2" }, "spec.template.spec.containers[0].image"},
		"foreign registry":          {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "example.com/ceph:v20.2.0" }, "spec.template.spec.containers[0].image"},
		"new violation beside":      {func(d *appsv1.Deployment) { d.Spec.Template.Spec.HostNetwork = true }, "spec.template.spec.hostNetwork"},
		"second replica":            {func(d *appsv1.Deployment) { d.Spec.Replicas = ptrTo[int32](2) }, "spec.replicas"},
		"app label removed":         {func(d *appsv1.Deployment) { delete(d.Labels, "app") }, "metadata.labels[app]"},
		"app label, finalizer gone": {func(d *appsv1.Deployment) { delete(d.Labels, "app"); d.Finalizers = nil }, "metadata.labels[app]"},
		"opt-out label":             {func(d *appsv1.Deployment) { d.Labels[contract.LabelManaged] = "false" }, "metadata.labels[mgr.ceph.rook.io/managed]"},
		"opt-out label and 3 replicas": {func(d *appsv1.Deployment) {
			d.Labels[contract.LabelManaged] = "false"
			d.Spec.Replicas = ptrTo[int32](3)
		}, "spec.replicas"},
		"forged CephCluster owner and privileged": {func(d *appsv1.Deployment) {
			d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: "rook-ceph", UID: "forged"}}
			d.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptrTo(true)}
		}, "metadata.ownerReferences[0]"},
		"live CephCluster owner added and privileged": {func(d *appsv1.Deployment) {
			d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: "rook-ceph", UID: liveCephClusterUID}}
			d.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptrTo(true)}
		}, "metadata.ownerReferences[0]"},
		"fixed beside an old violation": {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "quay.io/ceph/ceph:v20.2.4" }, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			old := completedMgr(t)
			d := old.DeepCopy()
			tc.edit(d)
			resp := v.Handle(t.Context(), request(admissionv1.Update, must(json.Marshal(d)), must(json.Marshal(old))))
			switch {
			case tc.wantField == "" && !resp.Allowed:
				t.Errorf("refused: %s", resp.Result.Message)
			case tc.wantField != "" && resp.Allowed:
				t.Errorf("admitted; want a denial naming %s", tc.wantField)
			case tc.wantField != "" && !strings.Contains(resp.Result.Message, tc.wantField):
				t.Errorf("denial %q does not name %s", resp.Result.Message, tc.wantField)
			}
		})
	}
	// A new mgr is judged in full.
	resp := v.Handle(t.Context(), request(admissionv1.Create, must(json.Marshal(completedMgr(t))), nil))
	if resp.Allowed {
		t.Error("a new v19 mgr was admitted under a minimum of 20")
	}
}

// TestTornDownClusterStaysWritable: with the namespace's cluster objects gone,
// metadata updates pass both handlers unchanged and a spec change is refused.
func TestTornDownClusterStaysWritable(t *testing.T) {
	old := completedMgr(t)
	for name, tc := range map[string]struct {
		edit  func(d *appsv1.Deployment)
		allow bool
	}{
		"label":       {func(d *appsv1.Deployment) { d.Labels["team"] = "x" }, true},
		"spec change": {func(d *appsv1.Deployment) { d.Spec.Replicas = ptrTo[int32](0) }, false},
	} {
		t.Run(name, func(t *testing.T) {
			d := old.DeepCopy()
			tc.edit(d)
			req := request(admissionv1.Update, must(json.Marshal(d)), must(json.Marshal(old)))
			req.Namespace = "gone"
			m := newMutator(t, mutate.DefaultPolicy()).Handle(t.Context(), req)
			v := newValidator(t, mutate.DefaultPolicy()).Handle(t.Context(), req)
			if m.Allowed != tc.allow || len(m.Patch) != 0 {
				t.Errorf("mutator: allowed %v (want %v), patch %s", m.Allowed, tc.allow, m.Patch)
			}
			if v.Allowed != tc.allow {
				t.Errorf("validator allowed %v, want %v (%v)", v.Allowed, tc.allow, v.Result)
			}
		})
	}
}

type staticMgrs map[string]metav1.Object

func (s staticMgrs) MgrDeployment(ns, name string) (metav1.Object, bool) {
	o, ok := s[ns+"/"+name]
	return o, ok
}

func TestScaleValidator(t *testing.T) {
	mgrs := staticMgrs{
		"rook-ceph/rook-ceph-mgr-a": &metav1.ObjectMeta{Name: "rook-ceph-mgr-a", Labels: map[string]string{"app": "rook-ceph-mgr", "mgr": "a"}},
		"rook-ceph/rook-ceph-mgr-z": &metav1.ObjectMeta{Name: "rook-ceph-mgr-z", Labels: map[string]string{"app": "rook-ceph-mgr", "mgr": "z", contract.LabelManaged: "false"}},
		"rook-ceph/rook-ceph-mgr-x": &metav1.ObjectMeta{Name: "rook-ceph-mgr-x", Labels: map[string]string{"app": "rook-ceph-mgr", "mgr": "x", contract.LabelManaged: "false"}},
		"rook-ceph/rook-ceph-mgr-f": &metav1.ObjectMeta{Name: "rook-ceph-mgr-f", Labels: map[string]string{"app": "rook-ceph-mgr", "mgr": "f"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: "rook-ceph", UID: "forged"}}},
		"rook-ceph/rook-ceph-mgr-r": &metav1.ObjectMeta{Name: "rook-ceph-mgr-r", Labels: map[string]string{"app": "rook-ceph-mgr", "mgr": "r"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: "rook-ceph", UID: liveCephClusterUID}}},
	}
	exempting := mutate.DefaultPolicy()
	exempting.Exemptions = []mutate.Exemption{{Namespace: "rook-ceph", Names: []string{"rook-ceph-mgr-x"}}}
	h := &admission.Webhook{Handler: &ScaleValidator{Mgrs: mgrs, Live: live, Policy: policy.Static(exempting)}}
	scaleKind := metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	req := func(name string, replicas int32, raw []byte) admission.Request {
		r := request(admissionv1.Update, raw, nil)
		r.Kind, r.Name = scaleKind, name
		scale := func(n int32) []byte {
			return must(json.Marshal(&autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "rook-ceph"}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}))
		}
		if raw == nil {
			r.Object.Raw = scale(replicas)
		}
		r.OldObject.Raw = scale(1)
		return r
	}
	for name, tc := range map[string]struct {
		req   admission.Request
		allow bool
		code  int32
	}{
		"mgr to 3":           {req("rook-ceph-mgr-a", 3, nil), false, 422},
		"mgr to 2":           {req("rook-ceph-mgr-a", 2, nil), false, 422},
		"mgr to 1":           {req("rook-ceph-mgr-a", 1, nil), true, 0},
		"opted-out mgr to 3": {req("rook-ceph-mgr-z", 3, nil), false, 422},
		"exempt mgr to 3":    {req("rook-ceph-mgr-x", 3, nil), true, 0},
		"forged owner to 3":  {req("rook-ceph-mgr-f", 3, nil), false, 422},
		"Rook's mgr to 3":    {req("rook-ceph-mgr-r", 3, nil), true, 0},
		// Not cached yet: read from the API server.
		"uncached mgr to 3": {req("rook-ceph-mgr-new", 3, nil), false, 422},
		"namesake to 3":     {req("rook-ceph-mgr-web", 3, nil), true, 0},
		"garbage":           {req("rook-ceph-mgr-a", 0, []byte("{")), false, 400},
		// A review may leave name and namespace to the object.
		"mgr to 3, named only in the Scale": {func() admission.Request {
			r := req("rook-ceph-mgr-a", 3, nil)
			r.Name, r.Namespace = "", ""
			return r
		}(), false, 422},
		"empty": {req("rook-ceph-mgr-a", 0, []byte{}), false, 400},
	} {
		t.Run(name, func(t *testing.T) {
			resp := h.Handle(t.Context(), tc.req)
			if resp.Allowed != tc.allow {
				t.Fatalf("allowed %v, want %v: %v", resp.Allowed, tc.allow, resp.Result)
			}
			if tc.code != 0 && (resp.Result == nil || resp.Result.Code != tc.code) {
				t.Errorf("result %+v, want code %d", resp.Result, tc.code)
			}
			if tc.code == 422 && !strings.Contains(resp.Result.Message, "spec.replicas") {
				t.Errorf("denial %q does not name spec.replicas", resp.Result.Message)
			}
		})
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rook-mgr/mgr-webhook/contract"
)

func TestLeftAlone(t *testing.T) {
	for name, tc := range map[string]struct {
		meta metav1.ObjectMeta
		want bool
	}{
		"ours":                  {metav1.ObjectMeta{Labels: map[string]string{"app": contract.AppName}}, false},
		"opted out":             {metav1.ObjectMeta{Labels: map[string]string{contract.LabelManaged: "false"}}, true},
		"managed true":          {metav1.ObjectMeta{Labels: map[string]string{contract.LabelManaged: "true"}}, false},
		"owned by CephCluster":  {metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: "x"}}}, true},
		"other CephCluster":     {metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "CephCluster", Name: "x"}}}, false},
		"owned by a ReplicaSet": {metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x"}}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := LeftAlone(&tc.meta); got != tc.want {
				t.Errorf("LeftAlone = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIntentUnchanged(t *testing.T) {
	base := func() *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": contract.AppName}, Annotations: map[string]string{"note": "x"}},
			Spec: appsv1.DeploymentSpec{Replicas: ptrTo[int32](1)}}
	}
	for name, tc := range map[string]struct {
		edit func(d *appsv1.Deployment)
		want bool
	}{
		"nothing":             {func(*appsv1.Deployment) {}, true},
		"status annotation":   {func(d *appsv1.Deployment) { d.Annotations[contract.AnnotationBootstrapStatus] = "{}" }, true},
		"revision annotation": {func(d *appsv1.Deployment) { d.Annotations[contract.AnnotationDeploymentRevision] = "3" }, true},
		"finalizer":           {func(d *appsv1.Deployment) { d.Finalizers = []string{contract.FinalizerCephxKey} }, true},
		"user annotation":     {func(d *appsv1.Deployment) { d.Annotations["note"] = "y" }, false},
		"annotation removed":  {func(d *appsv1.Deployment) { d.Annotations = nil }, false},
		"label":               {func(d *appsv1.Deployment) { d.Labels["team"] = "a" }, false},
		"spec":                {func(d *appsv1.Deployment) { d.Spec.Replicas = ptrTo[int32](0) }, false},
	} {
		t.Run(name, func(t *testing.T) {
			d := base()
			tc.edit(d)
			if got := IntentUnchanged(base(), d); got != tc.want {
				t.Errorf("IntentUnchanged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestValidateStaysMgr(t *testing.T) {
	now := metav1.Now()
	mgr := func(finalizer bool) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": contract.AppName, "mgr": "a"}}}
		if finalizer {
			d.Finalizers = []string{contract.FinalizerCephxKey}
		}
		return d
	}
	for name, tc := range map[string]struct {
		old, d *appsv1.Deployment
		refuse bool
	}{
		"label removed with finalizer": {mgr(true), func() *appsv1.Deployment { d := mgr(true); delete(d.Labels, "app"); return d }(), true},
		"label changed with finalizer": {mgr(true), func() *appsv1.Deployment { d := mgr(true); d.Labels["app"] = "x"; return d }(), true},
		"label and finalizer removed":  {mgr(true), func() *appsv1.Deployment { d := mgr(false); delete(d.Labels, "app"); return d }(), true},
		"no finalizer":                 {mgr(false), func() *appsv1.Deployment { d := mgr(false); delete(d.Labels, "app"); return d }(), true},
		"never a mgr":                  {func() *appsv1.Deployment { d := mgr(false); delete(d.Labels, "app"); return d }(), func() *appsv1.Deployment { d := mgr(false); delete(d.Labels, "app"); return d }(), false},
		"being deleted": {mgr(true), func() *appsv1.Deployment {
			d := mgr(true)
			delete(d.Labels, "app")
			d.DeletionTimestamp = &now
			return d
		}(), false},
		"stays": {mgr(true), mgr(true), false},
	} {
		t.Run(name, func(t *testing.T) {
			errs := ValidateStaysMgr(tc.old, tc.d)
			if (len(errs) > 0) != tc.refuse {
				t.Fatalf("errors %v, refuse %v", errs, tc.refuse)
			}
			if tc.refuse && errs[0].Field != "metadata.labels[app]" {
				t.Errorf("field %s", errs[0].Field)
			}
		})
	}
}

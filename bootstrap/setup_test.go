// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// TestPredicateIgnoresOwnWrites: the controller's status write (which bumps
// the generation) brings no reconcile; intent, finalizers, owners and
// deletion do.
func TestPredicateIgnoresOwnWrites(t *testing.T) {
	now := metav1.Now()
	for name, tc := range map[string]struct {
		edit func(d *appsv1.Deployment)
		want bool
	}{
		"status write": {func(d *appsv1.Deployment) {
			d.Generation++
			d.Annotations[contract.AnnotationBootstrapStatus] = `{"phase":"Ready"}`
		}, false},
		"revision":         {func(d *appsv1.Deployment) { d.Generation++; d.Annotations[contract.AnnotationDeploymentRevision] = "2" }, false},
		"modules override": {func(d *appsv1.Deployment) { d.Generation++; d.Annotations[contract.AnnotationModules] = "prometheus" }, true},
		"spec":             {func(d *appsv1.Deployment) { d.Generation++; d.Spec.Replicas = ptrTo[int32](0) }, true},
		"label":            {func(d *appsv1.Deployment) { d.Labels["team"] = "x" }, true},
		"finalizer":        {func(d *appsv1.Deployment) { d.Finalizers = nil }, true},
		"deletion":         {func(d *appsv1.Deployment) { d.DeletionTimestamp = &now }, true},
		"Rook owner": {func(d *appsv1.Deployment) {
			d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: "c"}}
		}, true},
	} {
		t.Run(name, func(t *testing.T) {
			old := mgr("rook-ceph-mgr-a", "a", "uid-a")
			old.Annotations = map[string]string{"note": "x"}
			old.Finalizers = []string{contract.FinalizerCephxKey}
			n := old.DeepCopy()
			tc.edit(n)
			if got := specOrIntentChanged(event.UpdateEvent{ObjectOld: old, ObjectNew: n}); got != tc.want {
				t.Errorf("reconcile %v, want %v", got, tc.want)
			}
		})
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package contract

import (
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestLeftAlone(t *testing.T) {
	for name, tc := range map[string]struct {
		meta metav1.ObjectMeta
		want bool
	}{
		"ours":                  {metav1.ObjectMeta{Labels: map[string]string{"app": AppName}}, false},
		"opted out":             {metav1.ObjectMeta{Labels: map[string]string{LabelManaged: "false"}}, true},
		"managed true":          {metav1.ObjectMeta{Labels: map[string]string{LabelManaged: "true"}}, false},
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
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": AppName}, Annotations: map[string]string{"note": "x"}},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)}}
	}
	for name, tc := range map[string]struct {
		edit func(d *appsv1.Deployment)
		want bool
	}{
		"nothing":             {func(*appsv1.Deployment) {}, true},
		"status annotation":   {func(d *appsv1.Deployment) { d.Annotations[AnnotationBootstrapStatus] = "{}" }, true},
		"revision annotation": {func(d *appsv1.Deployment) { d.Annotations[AnnotationDeploymentRevision] = "3" }, true},
		"finalizer":           {func(d *appsv1.Deployment) { d.Finalizers = []string{FinalizerCephxKey} }, true},
		"user annotation":     {func(d *appsv1.Deployment) { d.Annotations["note"] = "y" }, false},
		"annotation removed":  {func(d *appsv1.Deployment) { d.Annotations = nil }, false},
		"label":               {func(d *appsv1.Deployment) { d.Labels["team"] = "a" }, false},
		"spec":                {func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](0) }, false},
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

// TestClusterMgrs: the role watcher and the PDB count a namespace's managed,
// live mgrs with an id; a deleted one, one let go, one without an id and a
// Deployment that is no mgr are not.
func TestClusterMgrs(t *testing.T) {
	now := metav1.Now()
	live := func(ns, name, id string) appsv1.Deployment {
		return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{LabelApp: AppName, LabelMgrID: id}}}
	}
	deleted := live("rook-ceph", "rook-ceph-mgr-c", "c")
	deleted.DeletionTimestamp, deleted.Finalizers = &now, []string{FinalizerCephxKey}
	letGo := live("rook-ceph", "rook-ceph-mgr-d", "d")
	letGo.Labels[LabelManaged] = "false"
	noID := live("rook-ceph", "rook-ceph-mgr-e", "")
	notMgr := live("rook-ceph", "web", "f")
	notMgr.Labels[LabelApp] = "web"
	got := ClusterMgrs([]appsv1.Deployment{
		live("rook-ceph", "rook-ceph-mgr-a", "a"), live("rook-ceph", "rook-ceph-mgr-b", "b"), live("ceph-east", "rook-ceph-mgr-a", "a"),
		deleted, letGo, noID, notMgr,
	})
	want := map[string][]string{"rook-ceph": {"a", "b"}, "ceph-east": {"a"}}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("clusterMgrs = %v, want %v", got, want)
	}
}

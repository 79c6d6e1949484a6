// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// rookControlled marks o as Rook's operator's (controlled by a CephCluster).
func rookControlled(o metav1.Object) {
	o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: "rook-ceph", UID: "uid-cluster", Controller: ptrTo(true)}})
}

// TestSharedObjectsOfOthersAreLeftAlone: a cluster Service or PDB of our
// names that another object controls is neither adopted, changed nor
// deleted, and does not hold the mgr back.
func TestSharedObjectsOfOthersAreLeftAlone(t *testing.T) {
	ctx := context.Background()
	d := mgr("rook-ceph-mgr-a", "a", "uid-a")
	svc := desiredServices("rook-ceph")[0]
	rookControlled(svc)
	svc.Spec.Selector = map[string]string{"app": "rook-ceph-mgr", "rook": "theirs"}
	pdb := desiredPDB("rook-ceph")
	rookControlled(pdb)
	cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(d, svc, pdb).Build()
	r := &Reconciler{Client: cl, APIReader: cl, Recorder: events.NewFakeRecorder(8)}

	if err := r.ensureServices(ctx, &scope{d: d, id: "a"}); err != nil {
		t.Fatalf("ensureServices: %v; a Service of another must not block the mgr", err)
	}
	got := &corev1.Service{}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(svc), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Selector["rook"] != "theirs" || len(got.OwnerReferences) != 1 {
		t.Errorf("Rook's Service was changed: selector %v, owners %v", got.Spec.Selector, got.OwnerReferences)
	}
	// One managed mgr: the controller would remove its own PDB, not Rook's.
	if err := r.ensurePDB(ctx, &scope{d: d, id: "a", mgrs: []appsv1.Deployment{*d}}); err != nil {
		t.Fatal(err)
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(pdb), &policyv1.PodDisruptionBudget{}); err != nil {
		t.Errorf("Rook's PodDisruptionBudget was deleted: %v", err)
	}
	// Ours, owned by the mgr, is removed with one mgr left.
	ours := desiredPDB("rook-ceph")
	ours.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID}}
	cl = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(d, ours).Build()
	r = &Reconciler{Client: cl, APIReader: cl, Recorder: events.NewFakeRecorder(8)}
	if err := r.ensurePDB(ctx, &scope{d: d, id: "a", mgrs: []appsv1.Deployment{*d}}); err != nil {
		t.Fatal(err)
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(ours), &policyv1.PodDisruptionBudget{}); err == nil {
		t.Error("our PodDisruptionBudget stayed with one mgr")
	}
}

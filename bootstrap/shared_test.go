// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// rookControlled marks o as Rook's operator's (controlled by a CephCluster).
func rookControlled(o metav1.Object) {
	o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: "rook-ceph", UID: "uid-cluster", Controller: ptrTo(true)}})
}

// TestSharedObjectsOfOthersAreLeftAlone: a cluster Service or PDB of our
// names that another object controls is neither adopted, changed nor
// deleted, and does not hold the mgr back.
func TestSharedObjectsOfOthersAreLeftAlone(t *testing.T) {
	ctx := t.Context()
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

// TestServiceNotYetCached: two mgrs of a namespace bootstrap at once; the
// cluster Service the other made a moment ago is missing from this one's
// cache, so its create meets AlreadyExists. That Service carries our labels:
// it is the cluster's, and this mgr adds itself as an owner, with no error.
// One without our labels is someone else's, and the error says so.
func TestServiceNotYetCached(t *testing.T) {
	for name, tc := range map[string]struct {
		labels  map[string]string
		wantErr error
	}{
		"made by another mgr": {labels: clusterLabels("rook-ceph")},
		"someone else's":      {labels: map[string]string{"app": "other"}, wantErr: errNotOwned},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			d := mgr("rook-ceph-mgr-b", "b", "uid-b")
			other := mgr("rook-ceph-mgr-a", "a", "uid-a")
			var objs []client.Object
			for _, svc := range desiredServices("rook-ceph") {
				svc.Labels = tc.labels
				svc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: other.Name, UID: other.UID}}
				objs = append(objs, svc)
			}
			server := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(append(objs, d, other)...).Build()
			// The cache has not seen the Services yet.
			cache := interceptor.NewClient(server, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*corev1.Service); ok {
					return apierrors.NewNotFound(corev1.Resource("services"), key.Name)
				}
				return c.Get(ctx, key, obj, opts...)
			}})
			r := &Reconciler{Client: cache, APIReader: server, Recorder: events.NewFakeRecorder(8)}
			err := r.ensureServices(ctx, &scope{d: d, id: "b"})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			for _, want := range desiredServices("rook-ceph") {
				got := &corev1.Service{}
				if err := server.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
					t.Fatal(err)
				}
				if owned := isOwner(got, d); owned != (tc.wantErr == nil) {
					t.Errorf("Service %s owned by mgr b: %v (owners %v)", got.Name, owned, got.OwnerReferences)
				}
			}
		})
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/cluster"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// TestDeletionSteps: a deleted mgr's cephx key goes only when the controller
// made it and nothing else uses it; a cluster that does not answer holds the
// deletion until the finalizer timeout, never past it; every outcome but a
// retry lets the Deployment go.
func TestDeletionSteps(t *testing.T) {
	unavailable := &ceph.Error{Command: "auth rm", Unavailable: true}
	forbidden := apierrors.NewForbidden(corev1.Resource("secrets"), contract.KeyringSecretName("a"), errors.New("no RBAC"))
	apiDown := apierrors.NewServiceUnavailable("etcd is down")
	for name, tc := range map[string]struct {
		owned      bool          // the sealed status records the key as the controller's
		serverAddr bool          // ... and the key of its server_addr init containers
		otherMgr   bool          // another Deployment runs mgr a
		removeErr  error         // what Ceph answers to the removal
		deletedAgo time.Duration // since the deletion began
		readErr    error         // what the API server answers to the keyring Secret's read
		calls      []string
		reason     string // the Event
		released   bool
		retried    bool // Reconcile returns the error, for the workqueue's backoff
	}{
		"the controller's key: removed":       {owned: true, calls: []string{"rm"}, reason: ReasonKeyRemoved, released: true},
		"a key it did not make: kept":         {calls: nil, reason: ReasonKeyKept, released: true},
		"a key another mgr uses: kept":        {owned: true, otherMgr: true, calls: nil, reason: ReasonKeyKept, released: true},
		"cluster down: retried":               {owned: true, removeErr: unavailable, deletedAgo: time.Second, calls: []string{"rm"}, reason: ReasonCephUnavailable},
		"cluster down past the timeout: kept": {owned: true, removeErr: unavailable, deletedAgo: 3 * time.Minute, calls: []string{"rm"}, reason: ReasonKeyRemovalAbandoned, released: true},
		// A Ceph namespace being deleted takes the controller's RoleBinding
		// with it: what uses the key cannot be read, so it stays, at once.
		"its rights in the namespace gone: kept":        {owned: true, readErr: forbidden, deletedAgo: time.Second, reason: ReasonKeyKept, released: true},
		"the API server failing: retried":               {owned: true, readErr: apiDown, deletedAgo: time.Second, retried: true},
		"the API server failing past the timeout: kept": {owned: true, readErr: apiDown, deletedAgo: 3 * time.Minute, reason: ReasonKeyKept, released: true},
		// The server_addr init containers' key goes with the mgr's when the
		// controller made it, and stays with it when something uses the id.
		"both keys the controller's: both removed":          {owned: true, serverAddr: true, calls: []string{"rm", "rm"}, reason: ReasonKeyRemoved, released: true},
		"only the server_addr key its own: that removed":    {serverAddr: true, calls: []string{"rm"}, reason: ReasonKeyKept, released: true},
		"both its own, another mgr uses the id: both kept":  {owned: true, serverAddr: true, otherMgr: true, calls: nil, reason: ReasonKeyKept, released: true},
		"both its own, cluster down past the timeout: kept": {owned: true, serverAddr: true, removeErr: unavailable, deletedAgo: 3 * time.Minute, calls: []string{"rm"}, reason: ReasonKeyRemovalAbandoned, released: true},
	} {
		t.Run(name, func(t *testing.T) {
			d := mgr("rook-ceph-mgr-a", "a", "uid-a")
			d.Finalizers = []string{contract.FinalizerCephxKey}
			d.DeletionTimestamp = &metav1.Time{Time: time.Now().Add(-tc.deletedAgo)}
			st := mgrstatus.Status{Phase: mgrstatus.PhaseReady, KeyOwned: tc.owned, ServerAddrKeyOwned: tc.serverAddr}
			d.Annotations = map[string]string{contract.AnnotationBootstrapStatus: sealed(t, d, st)}
			objs := []client.Object{d,
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: contract.ConfigSecretName}, Data: map[string][]byte{contract.ConfigSecretMonHostKey: []byte("[v2:10.0.0.1:3300]")}},
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: contract.AdminKeyringSecretName}, Data: map[string][]byte{contract.KeyringKey: []byte("[client.admin]\n\tkey = AQ==\n")}},
			}
			if tc.otherMgr {
				objs = append(objs, mgr("rook-ceph-mgr-a-new", "a", "uid-a2"))
			}
			cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build()
			rec := events.NewFakeRecorder(8)
			serverAddrKey := contract.ServerAddrEntity("a")
			ks := &keyStore{keys: map[string]string{"mgr.a": "mon allow profile mgr", serverAddrKey: "mon allow command"}, removeErr: tc.removeErr}
			reader := interceptor.NewClient(cl, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*corev1.Secret); ok && key.Name == contract.KeyringSecretName("a") && tc.readErr != nil {
					return tc.readErr
				}
				return c.Get(ctx, key, obj, opts...)
			}})
			r := &Reconciler{Client: cl, APIReader: reader, Ceph: ks, Clusters: cluster.New(reader, ks, nil, 0), Recorder: rec, status: testStore(cl),
				Options: Options{FinalizerTimeout: 2 * time.Minute, CephRetryMax: 10 * time.Second}}
			res, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(d)})
			if tc.retried {
				held := &appsv1.Deployment{}
				if err == nil || len(ks.calls) != 0 || cl.Get(t.Context(), client.ObjectKeyFromObject(d), held) != nil || len(held.Finalizers) == 0 {
					t.Errorf("Reconcile: %v, ceph calls %v, finalizers %v; want the error back, no call, the deletion held", err, ks.calls, held.Finalizers)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ks.calls, tc.calls) {
				t.Errorf("ceph calls %v, want %v", ks.calls, tc.calls)
			}
			got := &appsv1.Deployment{}
			gone := apierrors.IsNotFound(cl.Get(t.Context(), client.ObjectKeyFromObject(d), got))
			if gone != tc.released {
				t.Errorf("released %v (finalizers %v), want %v", gone, got.Finalizers, tc.released)
			}
			if !tc.released && (res.RequeueAfter == 0 || res.RequeueAfter > 10*time.Second) {
				t.Errorf("looked at again after %v, want within the retry cap", res.RequeueAfter)
			}
			select {
			case e := <-rec.Events:
				if !strings.Contains(e, tc.reason) {
					t.Errorf("event %q, want reason %s", e, tc.reason)
				}
			default:
				t.Errorf("no event, want %s", tc.reason)
			}
			removed := tc.removeErr == nil && len(tc.calls) > 0
			if _, kept := ks.keys["mgr.a"]; kept == (removed && tc.owned) {
				t.Errorf("key mgr.a in Ceph afterwards: %v", kept)
			}
			if _, kept := ks.keys[serverAddrKey]; kept == (removed && tc.serverAddr) {
				t.Errorf("key %s in Ceph afterwards: %v", serverAddrKey, kept)
			}
		})
	}
}

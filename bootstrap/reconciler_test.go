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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rook-mgr/mgr-webhook/bootstrap/cluster"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// TestStaleCacheGuard: a cached Deployment older than the controller's own
// last status write is looked at again shortly, untouched (acting on it
// would undo that write); one as new or newer is acted on. The mgr here is
// let go (managed=false), so acting shows as its finalizer removed.
func TestStaleCacheGuard(t *testing.T) {
	const written = 7
	for name, tc := range map[string]struct {
		generation int64
		acted      bool
	}{
		"one behind the write": {written - 1, false},
		"the write's":          {written, true},
		"newer":                {written + 1, true},
	} {
		t.Run(name, func(t *testing.T) {
			d := mgr("rook-ceph-mgr-a", "a", "uid-a")
			d.Generation, d.Labels[contract.LabelManaged] = tc.generation, "false"
			d.Finalizers = []string{contract.FinalizerCephxKey}
			cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(d).Build()
			rec := events.NewFakeRecorder(4)
			r := &Reconciler{Client: cl, APIReader: cl, Recorder: rec, status: testStore(cl)}
			wroteAt(t, r.status, d, written)
			res, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(d)})
			if err != nil {
				t.Fatal(err)
			}
			got := &appsv1.Deployment{}
			if err := cl.Get(t.Context(), client.ObjectKeyFromObject(d), got); err != nil {
				t.Fatal(err)
			}
			acted := !slices.Contains(got.Finalizers, contract.FinalizerCephxKey)
			if acted != tc.acted {
				t.Errorf("acted %v, want %v", acted, tc.acted)
			}
			var event string
			if len(rec.Events) > 0 {
				event = <-rec.Events
			}
			if released := strings.Contains(event, ReasonReleased); released != tc.acted {
				t.Errorf("event %q: a %s Event is due exactly when the mgr is let go", event, ReasonReleased)
			}
			if !tc.acted && res.RequeueAfter != time.Second {
				t.Errorf("a stale read is looked at again in %s, want 1s", res.RequeueAfter)
			}
		})
	}
}

// TestScopeReads: listMgrs keeps the namespace's mgrs for the steps; conn
// reads the cluster's Secrets (cluster.Cache.Get) once per reconcile.
func TestScopeReads(t *testing.T) {
	a, b := mgr("rook-ceph-mgr-a", "a", "uid-a"), mgr("rook-ceph-mgr-b", "b", "uid-b")
	cfg := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: contract.ConfigSecretName},
		Data: map[string][]byte{contract.ConfigSecretMonHostKey: []byte("v2:10.0.0.1:3300")}}
	admin := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: contract.AdminKeyringSecretName},
		Data: map[string][]byte{contract.KeyringKey: []byte("[client.admin]\n")}}
	reads := 0
	cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(a, b, cfg, admin).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	r := &Reconciler{Client: cl, APIReader: cl, Clusters: cluster.New(cl, nil, nil, 0)}
	s := &scope{d: a, id: "a"}
	if err := r.listMgrs(t.Context(), s); err != nil || len(s.mgrs) != 2 {
		t.Fatalf("listMgrs: %d mgrs, %v", len(s.mgrs), err)
	}
	for range 2 {
		c, err := r.conn(t.Context(), s)
		if err != nil || c.MonHost != "v2:10.0.0.1:3300" || string(c.AdminKeyring) != "[client.admin]\n" || c.Cluster != "rook-ceph" {
			t.Fatalf("conn = %+v, %v", c, err)
		}
	}
	if reads != 2 {
		t.Errorf("%d reads for two conn calls, want the two Secrets once", reads)
	}
	// A failed read, too, is made once per reconcile, and again by the next.
	other := mgr("rook-ceph-mgr-a", "a", "uid-east")
	other.Namespace = "ceph-east"
	s = &scope{d: other}
	for range 2 {
		if _, err := r.conn(t.Context(), s); !errors.Is(err, cluster.ErrMissing) {
			t.Fatalf("a namespace without the cluster's Secrets: %v", err)
		}
	}
	if _, err := r.conn(t.Context(), &scope{d: other}); !errors.Is(err, cluster.ErrMissing) || reads != 6 {
		t.Errorf("%d reads after two reconciles of the failed namespace (want 6), %v", reads, err)
	}
}

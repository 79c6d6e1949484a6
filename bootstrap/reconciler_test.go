// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"errors"
	"net/netip"
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
			r := &Reconciler{Client: cl, APIReader: cl, Recorder: rec}
			r.written.Store(d.UID, int64(written))
			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(d)})
			if err != nil {
				t.Fatal(err)
			}
			got := &appsv1.Deployment{}
			if err := cl.Get(context.Background(), client.ObjectKeyFromObject(d), got); err != nil {
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

// TestCephRetryMax: the flag's value when set, 10 s when not.
func TestCephRetryMax(t *testing.T) {
	for set, want := range map[time.Duration]time.Duration{0: 10 * time.Second, 3 * time.Second: 3 * time.Second, time.Minute: time.Minute} {
		if got := (&Reconciler{Options: Options{CephRetryMax: set}}).cephRetryMax(); got != want {
			t.Errorf("CephRetryMax %s: %s, want %s", set, got, want)
		}
	}
}

// TestScopeReads: listMgrs keeps the namespace's mgrs for the steps; conn
// reads the cluster's Secrets once per reconcile, and says which are
// missing.
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
	r := &Reconciler{Client: cl, APIReader: cl}
	s := &scope{d: a, id: "a"}
	if err := r.listMgrs(context.Background(), s); err != nil || len(s.mgrs) != 2 {
		t.Fatalf("listMgrs: %d mgrs, %v", len(s.mgrs), err)
	}
	for range 2 {
		c, err := r.conn(context.Background(), s)
		if err != nil || c.MonHost != "v2:10.0.0.1:3300" || string(c.AdminKeyring) != "[client.admin]\n" || c.Cluster != "rook-ceph" {
			t.Fatalf("conn = %+v, %v", c, err)
		}
	}
	if reads != 2 {
		t.Errorf("%d reads for two conn calls, want the two Secrets once", reads)
	}
	if _, err := r.conn(context.Background(), &scope{d: mgr("x", "x", "uid-x")}); err != nil {
		t.Fatal(err) // same namespace: both there
	}
	other := mgr("rook-ceph-mgr-a", "a", "uid-east")
	other.Namespace = "ceph-east"
	if _, err := r.conn(context.Background(), &scope{d: other}); !errors.Is(err, errClusterMissing) ||
		!strings.Contains(err.Error(), contract.ConfigSecretName) || !strings.Contains(err.Error(), contract.AdminKeyringSecretName) {
		t.Errorf("a namespace without the cluster's Secrets: %v", err)
	}
	// The Secrets there, without the keys the connection needs.
	for _, sec := range []*corev1.Secret{cfg, admin} {
		empty := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ceph-empty", Name: sec.Name}}
		if err := cl.Create(context.Background(), empty); err != nil {
			t.Fatal(err)
		}
	}
	other.Namespace = "ceph-empty"
	if _, err := r.conn(context.Background(), &scope{d: other}); !errors.Is(err, errClusterMissing) ||
		!strings.Contains(err.Error(), contract.ConfigSecretName+"/"+contract.ConfigSecretMonHostKey) {
		t.Errorf("a namespace whose Secrets lack the keys: %v", err)
	}

	// With the mon networks restricted: a mon outside them is refused before
	// any connection, naming the address and the fix; one inside passes.
	r = &Reconciler{Client: cl, APIReader: cl, Options: Options{MonNetworks: []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}}}
	_, err := r.conn(context.Background(), &scope{d: a})
	if !errors.Is(err, errMonHostRefused) || !strings.Contains(err.Error(), "10.0.0.1") || !strings.Contains(err.Error(), "--mon-networks") {
		t.Errorf("a mon outside --mon-networks: %v", err)
	}
	r.MonNetworks = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	if c, err := r.conn(context.Background(), &scope{d: a}); err != nil || c.MonHost != "v2:10.0.0.1:3300" {
		t.Errorf("a mon inside --mon-networks: %+v, %v", c, err)
	}
}

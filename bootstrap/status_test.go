// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
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

// testStore is a Store with its key loaded, writing through cl.
func testStore(cl client.Client) *mgrstatus.Store {
	s := &mgrstatus.Store{Client: cl, Reader: cl}
	s.SetKey([]byte("0123456789abcdef0123456789abcdef"))
	return s
}

// sealed is st as the annotation of d, sealed by testStore's key: written
// through a Store on a client of its own, and read back.
func sealed(t *testing.T, d *appsv1.Deployment, st mgrstatus.Status) string {
	t.Helper()
	cur := d.DeepCopy()
	cur.Annotations = nil
	cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(cur).Build()
	if err := testStore(cl).Save(t.Context(), cur, st); err != nil {
		t.Fatal(err)
	}
	stored := &appsv1.Deployment{}
	if err := cl.Get(t.Context(), client.ObjectKeyFromObject(d), stored); err != nil {
		t.Fatal(err)
	}
	return stored.Annotations[contract.AnnotationBootstrapStatus]
}

// wroteAt has s save a status of d as if the API server answered the
// write with generation g, so that s remembers a write at g.
func wroteAt(t *testing.T, s *mgrstatus.Store, d *appsv1.Deployment, g int64) {
	t.Helper()
	cl, reader := s.Client, s.Reader
	defer func() { s.Client, s.Reader = cl, reader }()
	w := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(d.DeepCopy()).
		WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := c.Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			obj.SetGeneration(g)
			return nil
		}}).Build()
	s.Client, s.Reader = w, w
	cur := &appsv1.Deployment{}
	if err := w.Get(t.Context(), client.ObjectKeyFromObject(d), cur); err != nil {
		t.Fatal(err)
	}
	cur.Generation = g - 1
	if err := s.Save(t.Context(), cur, mgrstatus.Status{Phase: mgrstatus.PhaseWaitingForPod, ObservedGeneration: g - 1}); err != nil {
		t.Fatal(err)
	}
	if _, behind := s.Behind(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{UID: d.UID, Generation: g - 1}}); !behind {
		t.Fatalf("the store remembers no write at generation %d", g)
	}
}

// TestWriteStatusWritesEveryOutcome: writeStatus, the one status writer, turns each
// kind of failure into its phase, lastError and Warning Event, writes a
// success as given, and returns the step's error for the backoff.
func TestWriteStatusWritesEveryOutcome(t *testing.T) {
	for name, tc := range map[string]struct {
		err        error
		wantPhase  mgrstatus.Phase
		wantReason string
	}{
		"success":          {nil, mgrstatus.PhaseWaitingForPod, ""},
		"cluster missing":  {fmt.Errorf("%w: namespace lacks Secret x", cluster.ErrMissing), mgrstatus.PhaseError, ReasonCephClusterMissing},
		"not owned":        {fmt.Errorf("%w: Secret y", errNotOwned), mgrstatus.PhaseError, ReasonNotOwned},
		"mon_host refused": {fmt.Errorf("%w: 127.0.0.1", cluster.ErrMonHostRefused), mgrstatus.PhaseError, ReasonMonHostRefused},
		"dashboard secret": {fmt.Errorf("%w: no password", errDashboardPassword), mgrstatus.PhaseError, ReasonDashboardPasswordInvalid},
		"ceph unavailable": {&ceph.Error{Command: "mgr dump", Unavailable: true, Message: "timed out"}, mgrstatus.PhaseCephUnavailable, ReasonCephUnavailable},
		"anything else":    {errors.New("boom"), mgrstatus.PhaseError, ReasonBootstrapFailed},
	} {
		t.Run(name, func(t *testing.T) {
			d := mgr("rook-ceph-mgr-a", "a", "uid-a")
			d.Generation = 3
			cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(d).Build()
			rec := events.NewFakeRecorder(4)
			r := &Reconciler{Client: cl, APIReader: cl, Recorder: rec, status: testStore(cl)}
			cur := &appsv1.Deployment{}
			if err := cl.Get(t.Context(), client.ObjectKeyFromObject(d), cur); err != nil {
				t.Fatal(err)
			}
			got := r.writeStatus(t.Context(), cur, mgrstatus.Status{Phase: mgrstatus.PhaseWaitingForPod, ObservedGeneration: 3}, nil, tc.err)
			if !errors.Is(got, tc.err) && got != tc.err {
				t.Errorf("writeStatus returned %v, want the step's error %v", got, tc.err)
			}
			stored := &appsv1.Deployment{}
			if err := cl.Get(t.Context(), client.ObjectKeyFromObject(d), stored); err != nil {
				t.Fatal(err)
			}
			st, err := mgrstatus.Of(stored)
			if err != nil || st.Phase != tc.wantPhase {
				t.Errorf("stored status %+v (%v), want phase %s", st, err, tc.wantPhase)
			}
			if tc.err != nil && st.LastError != tc.err.Error() {
				t.Errorf("lastError %q, want %q", st.LastError, tc.err.Error())
			}
			select {
			case e := <-rec.Events:
				if tc.wantReason == "" || !strings.Contains(e, "Warning "+tc.wantReason) {
					t.Errorf("Event %q, want reason %q", e, tc.wantReason)
				}
			default:
				if tc.wantReason != "" {
					t.Errorf("no %s Event", tc.wantReason)
				}
			}
		})
	}
}

// TestRecreatedDeploymentIsNotStale: a Deployment deleted and created again
// under its name starts at generation 1, below the generation of the last
// status write on its predecessor; it is news, not a stale cache.
func TestRecreatedDeploymentIsNotStale(t *testing.T) {
	old := mgr("rook-ceph-mgr-a", "a", "uid-old")
	fresh := mgr("rook-ceph-mgr-a", "a", "uid-new")
	fresh.Generation = 1
	cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(fresh).Build()
	r := &Reconciler{Client: cl, APIReader: cl, Clusters: cluster.New(cl, nil, nil, 0), Recorder: events.NewFakeRecorder(8), Options: DefaultOptions(), status: testStore(cl)}
	wroteAt(t, r.status, old, 7)
	res, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(fresh)})
	if res.RequeueAfter == time.Second && err == nil {
		t.Fatal("the new Deployment was taken for a stale cache of the old one")
	}
	stored := &appsv1.Deployment{}
	if err := cl.Get(t.Context(), client.ObjectKeyFromObject(fresh), stored); err != nil {
		t.Fatal(err)
	}
	if st, _ := mgrstatus.Of(stored); st.Phase == "" {
		t.Errorf("no status written for the new Deployment: the reconcile did not act (result %+v, %v)", res, err)
	}
}

// TestForgedStatusIsReported: a reconcile's scope starts from the status the
// controller sealed, and one it did not seal is ignored with a StatusForged
// Event (the Store tells which: mgrstatus TestForgedStatusIgnored).
func TestForgedStatusIsReported(t *testing.T) {
	d := mgr("rook-ceph-mgr-a", "a", "uid-a")
	mine := mgrstatus.Status{Phase: mgrstatus.PhaseReady, Modules: []string{"prometheus"}}
	for name, tc := range map[string]struct {
		annotation string
		forged     bool
	}{
		"sealed":   {sealed(t, d, mine), false},
		"unsealed": {`{"phase":"Ready","modules":["prometheus","nfs"]}`, true},
		"garbled":  {"{", true},
	} {
		t.Run(name, func(t *testing.T) {
			rec := events.NewFakeRecorder(4)
			r := &Reconciler{Recorder: rec, status: testStore(nil)}
			cur := d.DeepCopy()
			cur.Annotations = map[string]string{contract.AnnotationBootstrapStatus: tc.annotation}
			s := r.newScope(cur, "a")
			if got := s.prev.Phase == mgrstatus.PhaseReady; got == tc.forged {
				t.Errorf("scope starts from %+v", s.prev)
			}
			var event string
			if len(rec.Events) > 0 {
				event = <-rec.Events
			}
			if strings.Contains(event, ReasonStatusForged) != tc.forged {
				t.Errorf("event %q; want a %s Event: %v", event, ReasonStatusForged, tc.forged)
			}
		})
	}
}

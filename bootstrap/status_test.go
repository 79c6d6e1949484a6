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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/cluster"
	"github.com/rook-mgr/mgr-webhook/contract"
)

func TestStatusOf(t *testing.T) {
	with := func(v string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-mgr-a"}}
		if v != "" {
			d.Annotations = map[string]string{contract.AnnotationBootstrapStatus: v}
		}
		return d
	}
	ready := Status{Phase: PhaseReady, ObservedGeneration: 5, Modules: []string{"prometheus"}, Dashboard: true}
	got, err := StatusOf(with(ready.encode()))
	if err != nil || got.Phase != PhaseReady || got.ObservedGeneration != 5 || !got.Dashboard || len(got.Modules) != 1 {
		t.Errorf("round trip: %+v, %v", got, err)
	}
	if got, err := StatusOf(with("")); err != nil || got.Phase != "" {
		t.Errorf("no annotation: %+v, %v", got, err)
	}
	_, err = StatusOf(with("{not json"))
	if err == nil || !strings.Contains(err.Error(), contract.AnnotationBootstrapStatus) || !strings.Contains(err.Error(), "rook-ceph/rook-ceph-mgr-a") {
		t.Errorf("garbled: %v; want an error naming the annotation and the Deployment", err)
	}
	r := &Reconciler{Recorder: events.NewFakeRecorder(8), seal: testSealer()}
	if s := r.readStatus(with("{not json")); s.Phase != "" {
		t.Errorf("the controller's reader keeps a garbled status: %+v", s)
	}
}

func testSealer() *sealer {
	s := &sealer{}
	key := []byte("0123456789abcdef0123456789abcdef")
	s.key.Store(&key)
	return s
}

// TestForgedStatusIgnored: the controller acts only on a status it sealed for
// this Deployment and, while it remembers one, only on the one it last wrote;
// anything else is ignored with a StatusForged Event.
func TestForgedStatusIgnored(t *testing.T) {
	s := testSealer()
	sealed := func(uid string, st Status) string {
		st.Seal = s.seal(types.UID(uid), st)
		return st.encode()
	}
	mine := Status{Phase: PhaseReady, ObservedGeneration: 4, Modules: []string{"prometheus"}, MetricsPort: 9283}
	older := Status{Phase: PhaseReady, ObservedGeneration: 2, Modules: []string{"prometheus", "nfs", "iostat"}}
	forged := Status{Phase: PhaseReady, ObservedGeneration: 4, Modules: []string{"prometheus", "nfs", "iostat", "restful"}, MetricsPort: 1}
	for name, tc := range map[string]struct {
		annotation string
		remember   *Status
		want       Status
		event      bool
	}{
		"sealed":                          {sealed("uid-a", mine), nil, mine, false},
		"sealed, as last written":         {sealed("uid-a", mine), &mine, mine, false},
		"unsealed":                        {forged.encode(), nil, Status{}, true},
		"unsealed, last written known":    {forged.encode(), &mine, mine, true},
		"another Deployment's seal":       {sealed("uid-b", forged), nil, Status{}, true},
		"a replay of an older own status": {sealed("uid-a", older), &mine, mine, true},
		"garbled":                         {"{", nil, Status{}, true},
		"removed, last written known":     {"", &mine, mine, false},
	} {
		t.Run(name, func(t *testing.T) {
			rec := events.NewFakeRecorder(8)
			r := &Reconciler{Recorder: rec, seal: s}
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-mgr-a", UID: "uid-a"}}
			if tc.annotation != "" {
				d.Annotations = map[string]string{contract.AnnotationBootstrapStatus: tc.annotation}
			}
			if tc.remember != nil {
				m := *tc.remember
				m.Seal = s.seal(d.UID, m)
				r.lastGood.Store(d.UID, m)
				tc.want.Seal = m.Seal
			} else if !tc.event && tc.want.Phase != "" {
				tc.want.Seal = s.seal(d.UID, tc.want)
			}
			got := r.readStatus(d)
			if got.encode() != tc.want.encode() {
				t.Errorf("acted on %s\nwant %s", got.encode(), tc.want.encode())
			}
			select {
			case e := <-rec.Events:
				if !tc.event || !strings.Contains(e, ReasonStatusForged) {
					t.Errorf("event %q", e)
				}
			default:
				if tc.event {
					t.Error("no StatusForged Event")
				}
			}
		})
	}
}

// TestRecordWritesEveryOutcome: record, the one status writer, turns each
// kind of failure into its phase, lastError and Warning Event, writes a
// success as given, and returns the step's error for the backoff.
func TestRecordWritesEveryOutcome(t *testing.T) {
	for name, tc := range map[string]struct {
		err        error
		wantPhase  Phase
		wantReason string
	}{
		"success":          {nil, PhaseWaitingForPod, ""},
		"cluster missing":  {fmt.Errorf("%w: namespace lacks Secret x", cluster.ErrMissing), PhaseError, ReasonCephClusterMissing},
		"not owned":        {fmt.Errorf("%w: Secret y", errNotOwned), PhaseError, ReasonNotOwned},
		"mon_host refused": {fmt.Errorf("%w: 127.0.0.1", cluster.ErrMonHostRefused), PhaseError, ReasonMonHostRefused},
		"dashboard secret": {fmt.Errorf("%w: no password", errDashboardPassword), PhaseError, ReasonDashboardPasswordInvalid},
		"ceph unavailable": {&ceph.Error{Command: "mgr dump", Unavailable: true, Message: "timed out"}, PhaseCephUnavailable, ReasonCephUnavailable},
		"anything else":    {errors.New("boom"), PhaseError, ReasonBootstrapFailed},
	} {
		t.Run(name, func(t *testing.T) {
			d := mgr("rook-ceph-mgr-a", "a", "uid-a")
			d.Generation = 3
			cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(d).Build()
			rec := events.NewFakeRecorder(4)
			r := &Reconciler{Client: cl, APIReader: cl, Recorder: rec, seal: testSealer()}
			cur := &appsv1.Deployment{}
			if err := cl.Get(t.Context(), client.ObjectKeyFromObject(d), cur); err != nil {
				t.Fatal(err)
			}
			got := r.writeStatus(t.Context(), cur, Status{Phase: PhaseWaitingForPod, ObservedGeneration: 3}, tc.err)
			if !errors.Is(got, tc.err) && got != tc.err {
				t.Errorf("record returned %v, want the step's error %v", got, tc.err)
			}
			stored := &appsv1.Deployment{}
			if err := cl.Get(t.Context(), client.ObjectKeyFromObject(d), stored); err != nil {
				t.Fatal(err)
			}
			st, err := StatusOf(stored)
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
	r := &Reconciler{Client: cl, APIReader: cl, Clusters: cluster.New(cl, nil, nil, 0), Recorder: events.NewFakeRecorder(8), Options: DefaultOptions(), seal: testSealer()}
	r.written.Store(old.UID, int64(7))
	res, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(fresh)})
	if res.RequeueAfter == time.Second && err == nil {
		t.Fatal("the new Deployment was taken for a stale cache of the old one")
	}
	stored := &appsv1.Deployment{}
	if err := cl.Get(t.Context(), client.ObjectKeyFromObject(fresh), stored); err != nil {
		t.Fatal(err)
	}
	if st, _ := StatusOf(stored); st.Phase == "" {
		t.Errorf("no status written for the new Deployment: the reconcile did not act (result %+v, %v)", res, err)
	}
}

// TestSaveStatusGenerations: the write moves the generation from g to g+1
// (the API server copies annotations to ReplicaSets), so the status says
// observedGeneration g+1 and the write is remembered for the stale-cache
// guard; a status as written is not written again; a write that keeps
// meeting conflicts gives up after five tries with the conflict.
func TestSaveStatusGenerations(t *testing.T) {
	ctx := t.Context()
	d := mgr("rook-ceph-mgr-a", "a", "uid-a")
	d.Generation = 3
	patches := 0
	conflict := false
	cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(d).
		WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patches++
			if patches > 50 {
				// A retry loop that never gives up ends here, and fails
				// the count below, instead of hanging the test.
				return errors.New("retried without end")
			}
			if conflict {
				return apierrors.NewConflict(appsv1.Resource("deployments"), obj.GetName(), errors.New("the object has been modified"))
			}
			return c.Patch(ctx, obj, patch, opts...)
		}}).Build()
	r := &Reconciler{Client: cl, APIReader: cl, Recorder: events.NewFakeRecorder(4), seal: testSealer()}
	cur := &appsv1.Deployment{}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(d), cur); err != nil {
		t.Fatal(err)
	}
	if err := r.saveStatus(ctx, cur, Status{Phase: PhaseReady, ObservedGeneration: 3}); err != nil {
		t.Fatal(err)
	}
	stored := &appsv1.Deployment{}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(d), stored); err != nil {
		t.Fatal(err)
	}
	if st, err := StatusOf(stored); err != nil || st.ObservedGeneration != 4 || st.Phase != PhaseReady {
		t.Errorf("stored status %+v (%v), want Ready at observedGeneration 4", st, err)
	}
	if g, ok := r.written.Load(d.UID); !ok || g.(int64) != stored.Generation {
		t.Errorf("written %v, want the generation patched (%d)", g, stored.Generation)
	}
	patches = 0
	if err := r.saveStatus(ctx, stored, Status{Phase: PhaseReady, ObservedGeneration: 4}); err != nil || patches != 0 {
		t.Errorf("the same status again: %d patches, %v", patches, err)
	}
	conflict, patches = true, 0
	err := r.saveStatus(ctx, stored, Status{Phase: PhaseError, ObservedGeneration: 4, LastError: "boom"})
	if !apierrors.IsConflict(err) || patches != 5 {
		t.Errorf("under conflicts: %d patches, %v; want 5 and the conflict", patches, err)
	}
}

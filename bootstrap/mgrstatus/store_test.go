// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mgrstatus

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// testStore is a Store with its key loaded, writing through cl.
func testStore(cl client.Client) *Store {
	s := &Store{Client: cl, Reader: cl}
	s.SetKey([]byte("0123456789abcdef0123456789abcdef"))
	return s
}

func TestStatusOf(t *testing.T) {
	with := func(v string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-mgr-a"}}
		if v != "" {
			d.Annotations = map[string]string{contract.AnnotationBootstrapStatus: v}
		}
		return d
	}
	ready := Status{Phase: PhaseReady, ObservedGeneration: 5, Modules: []string{"prometheus"}, Dashboard: true}
	got, err := Of(with(ready.encode()))
	if err != nil || got.Phase != PhaseReady || got.ObservedGeneration != 5 || !got.Dashboard || len(got.Modules) != 1 {
		t.Errorf("round trip: %+v, %v", got, err)
	}
	if got, err := Of(with("")); err != nil || got.Phase != "" {
		t.Errorf("no annotation: %+v, %v", got, err)
	}
	_, err = Of(with("{not json"))
	if err == nil || !strings.Contains(err.Error(), contract.AnnotationBootstrapStatus) || !strings.Contains(err.Error(), "rook-ceph/rook-ceph-mgr-a") {
		t.Errorf("garbled: %v; want an error naming the annotation and the Deployment", err)
	}
	if s, forged := testStore(nil).Read(with("{not json")); s.Phase != "" || !forged {
		t.Errorf("the controller's reader keeps a garbled status: %+v, forged %v", s, forged)
	}
}

// TestForgedStatusIgnored: the controller acts only on a status it sealed for
// this Deployment and, while it remembers one, only on the one it last wrote;
// anything else is ignored, and said to be forged (the controller's Event).
func TestForgedStatusIgnored(t *testing.T) {
	s := testStore(nil)
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
			r := testStore(nil)
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
			got, forged := r.Read(d)
			if got.encode() != tc.want.encode() {
				t.Errorf("acted on %s\nwant %s", got.encode(), tc.want.encode())
			}
			if forged != tc.event {
				t.Errorf("forged %v, want %v", forged, tc.event)
			}
		})
	}
}

// TestBehind: a cached Deployment older than the Store's last write to it is
// behind (a stale cache); one as new or newer is not, nor is a Deployment
// created again under the name (another UID), nor one forgotten.
func TestBehind(t *testing.T) {
	s := testStore(nil)
	s.written.Store(types.UID("uid-a"), int64(7))
	for name, tc := range map[string]struct {
		uid        types.UID
		generation int64
		behind     bool
	}{
		"one behind the write":        {"uid-a", 6, true},
		"the write's":                 {"uid-a", 7, false},
		"newer":                       {"uid-a", 8, false},
		"created again, generation 1": {"uid-b", 1, false},
	} {
		t.Run(name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{UID: tc.uid, Generation: tc.generation}}
			if g, behind := s.Behind(d); behind != tc.behind || (behind && g != 7) {
				t.Errorf("Behind = %d, %v; want %v", g, behind, tc.behind)
			}
		})
	}
	s.Forget("uid-a")
	if _, behind := s.Behind(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{UID: "uid-a", Generation: 1}}); behind {
		t.Error("behind a write it forgot")
	}
}

// TestSaveStatusGenerations: the write moves the generation from g to g+1
// (the API server copies annotations to ReplicaSets), so the status says
// observedGeneration g+1 and the write is remembered for the stale-cache
// guard; a status as written is not written again; a write that keeps
// meeting conflicts gives up after five tries with the conflict.
func TestSaveStatusGenerations(t *testing.T) {
	ctx := t.Context()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-mgr-a", UID: "uid-a"}}
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
	r := testStore(cl)
	cur := &appsv1.Deployment{}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(d), cur); err != nil {
		t.Fatal(err)
	}
	if err := r.Save(ctx, cur, Status{Phase: PhaseReady, ObservedGeneration: 3}); err != nil {
		t.Fatal(err)
	}
	stored := &appsv1.Deployment{}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(d), stored); err != nil {
		t.Fatal(err)
	}
	if st, err := Of(stored); err != nil || st.ObservedGeneration != 4 || st.Phase != PhaseReady {
		t.Errorf("stored status %+v (%v), want Ready at observedGeneration 4", st, err)
	}
	if g, ok := r.written.Load(d.UID); !ok || g.(int64) != stored.Generation {
		t.Errorf("written %v, want the generation patched (%d)", g, stored.Generation)
	}
	patches = 0
	if err := r.Save(ctx, stored, Status{Phase: PhaseReady, ObservedGeneration: 4}); err != nil || patches != 0 {
		t.Errorf("the same status again: %d patches, %v", patches, err)
	}
	conflict, patches = true, 0
	err := r.Save(ctx, stored, Status{Phase: PhaseError, ObservedGeneration: 4, LastError: "boom"})
	if !apierrors.IsConflict(err) || patches != 5 {
		t.Errorf("under conflicts: %d patches, %v; want 5 and the conflict", patches, err)
	}
}

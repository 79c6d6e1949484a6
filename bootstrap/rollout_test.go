// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/cluster"
	"github.com/rook-mgr/mgr-webhook/bootstrap/rollout"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/policy"
)

// mgrMapCeph answers MgrDump with a fixed mgr map and records Run.
type mgrMapCeph struct {
	scriptedCeph
	m ceph.MgrMap
}

func (c *mgrMapCeph) MgrDump(context.Context, ceph.Conn) (ceph.MgrMap, error) { return c.m, nil }

// TestRollOutFailsOverOnceAndNeverForAnExemptMgr: the held active mgr a,
// whose standby b runs its new pod and whose hold has settled, is failed
// over with one `ceph mgr fail a`; a second reconcile reading the same map
// (Ceph not yet promoted) fails nothing again. A hold mark on a mgr the
// policy exempts is none: the webhook never judged that write, so the mark
// may be its editor's, and it fails nothing over.
func TestRollOutFailsOverOnceAndNeverForAnExemptMgr(t *testing.T) {
	for name, exempt := range map[string]bool{"governed": false, "exempt": true} {
		t.Run(name, func(t *testing.T) {
			one := int32(1)
			a, b := mgr("rook-ceph-mgr-a", "a", "uid-a"), mgr("rook-ceph-mgr-b", "b", "uid-b")
			for _, d := range []*appsv1.Deployment{a, b} {
				d.Generation, d.Spec.Replicas = 2, &one
				d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1}
			}
			a.Spec.Paused, a.Status.UpdatedReplicas = true, 0 // held: its pod runs the old template
			a.Annotations = map[string]string{contract.AnnotationRolloutHold: contract.RolloutHoldStandbysFirst}
			p := mutate.DefaultPolicy()
			if exempt {
				p.Exemptions = []mutate.Exemption{{Namespace: "rook-ceph"}}
			}
			fc := &mgrMapCeph{m: ceph.MgrMap{Available: true, ActiveName: "a", ActiveGID: 4100}}
			fc.m.Standbys = append(fc.m.Standbys, struct {
				Name string `json:"name"`
			}{Name: "b"})
			cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(a, b).Build()
			r := &Reconciler{Client: cl, APIReader: cl, Ceph: fc, Recorder: events.NewFakeRecorder(8),
				Clusters: cluster.New(cl, fc, nil, 0), Options: Options{Policy: policy.Static(p)}}
			// Seen held for longer than Settle.
			r.rollouts.heldFor(a, time.Now().Add(-rollout.Settle-time.Second))
			for range 2 {
				s := &scope{d: a.DeepCopy(), id: "a", mgrs: []appsv1.Deployment{*a, *b}, c: &ceph.Conn{Cluster: "rook-ceph"}}
				if _, stop, err := r.rollOut(t.Context(), s); err != nil || stop == exempt {
					t.Fatalf("rollOut: stop %t, %v", stop, err)
				}
			}
			fails := slices.IndexFunc(fc.calls, func(c ceph.Command) bool { return c.Name == "mgr fail" })
			var n int
			for _, c := range fc.calls {
				if c.Name == "mgr fail" {
					n++
				}
			}
			switch {
			case exempt && n != 0:
				t.Errorf("an exempt mgr's hold mark made %d `ceph mgr fail` calls", n)
			case !exempt && (n != 1 || !slices.Equal(fc.calls[fails].Args, []string{"mgr", "fail", "a"})):
				t.Errorf("calls %v: want one `ceph mgr fail a` over two reconciles", fc.calls)
			}
		})
	}
}

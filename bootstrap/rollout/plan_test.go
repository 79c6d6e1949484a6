// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rook-mgr/mgr-webhook/contract"
)

func TestPlan(t *testing.T) {
	settled := func(id string) Mgr { return Mgr{ID: id, Replicas: 1, Current: true, Ready: true} }
	held := func(id string) Mgr { return Mgr{ID: id, Replicas: 1, Held: true, Ready: true, HeldFor: Settle} }
	rolling := func(id string) Mgr { return Mgr{ID: id, Replicas: 1} }
	ab := Map{Available: true, Active: "a", ActiveGID: 4100, Standbys: []string{"b"}}
	abc := Map{Available: true, Active: "a", ActiveGID: 4100, Standbys: []string{"b", "c"}}
	for _, tc := range []struct {
		name       string
		mgrs       []Mgr
		m          Map
		failedOver uint64
		want       Step
	}{
		{name: "nothing held", mgrs: []Mgr{settled("a"), settled("b")}, m: ab, want: Step{Action: Wait}},
		{name: "both held: the standby first", mgrs: []Mgr{held("a"), held("b")}, m: ab, want: Step{Action: Release, ID: "b"}},
		{name: "three held: standbys one at a time, by name", mgrs: []Mgr{held("c"), held("a"), held("b")}, m: abc, want: Step{Action: Release, ID: "b"}},
		{name: "the next standby waits for the one rolling", mgrs: []Mgr{held("a"), rolling("b"), held("c")}, m: Map{Available: true, Active: "a", Standbys: []string{"c"}},
			want: Step{Action: Wait, ID: "b"}},
		{name: "a rolled standby whose daemon has not joined is waited for", mgrs: []Mgr{held("a"), settled("b")}, m: Map{Available: true, Active: "a"},
			want: Step{Action: Wait, ID: "b"}},
		{name: "standbys rolled: the active fails over", mgrs: []Mgr{held("a"), settled("b"), settled("c")}, m: abc, want: Step{Action: Failover, ID: "a"}},
		{name: "an active held for less than Settle waits for the rest of the change", mgrs: []Mgr{{ID: "a", Replicas: 1, Held: true, Ready: true, HeldFor: Settle - time.Second}, settled("b")},
			m: ab, want: Step{Action: Wait, ID: "a"}},
		{name: "failed over, the same daemon still active: wait", mgrs: []Mgr{held("a"), settled("b")}, m: ab, failedOver: 4100, want: Step{Action: Wait, ID: "a"}},
		{name: "failed over: the old active, now a standby, is released",
			mgrs: []Mgr{held("a"), settled("b")}, m: Map{Available: true, Active: "b", ActiveGID: 4200, Standbys: []string{"a"}}, failedOver: 4100,
			want: Step{Action: Release, ID: "a"}},
		{name: "the old active released and rolling: wait", mgrs: []Mgr{rolling("a"), settled("b")}, m: Map{Available: true, Active: "b"},
			want: Step{Action: Wait, ID: "a"}},
		{name: "the held active with no standby is released at once: nothing to fail over to", mgrs: []Mgr{{ID: "a", Replicas: 1, Held: true, Ready: true}},
			m: Map{Available: true, Active: "a", ActiveGID: 1}, want: Step{Action: Release, ID: "a"}},
		{name: "a held change that changes no pod is released at once", mgrs: []Mgr{{ID: "a", Replicas: 1, Held: true, Current: true, Ready: true}, settled("b")},
			m: ab, want: Step{Action: Release, ID: "a"}},
		{name: "... even with no mgr available", mgrs: []Mgr{{ID: "a", Replicas: 1, Held: true, Current: true}}, want: Step{Action: Release, ID: "a"}},
		{name: "no mgr available: nothing to keep, the change may be the fix", mgrs: []Mgr{held("b"), held("a")}, m: Map{Active: "a", Standbys: []string{"b"}},
			want: Step{Action: Release, ID: "a"}},
		{name: "no active mgr: the same", mgrs: []Mgr{held("a"), held("b")}, m: Map{Available: true}, want: Step{Action: Release, ID: "a"}},
		{name: "a standby past its progress deadline stalls the rollout; the active keeps its pod",
			mgrs: []Mgr{held("a"), {ID: "b", Replicas: 1, Stalled: `ReplicaSet "rook-ceph-mgr-b-5d" has timed out progressing.`}},
			m:    Map{Available: true, Active: "a", ActiveGID: 4100}, want: Step{Action: Stall, ID: "b"}},
		{name: "a scaled-down mgr is in no mgr map and holds nothing up", mgrs: []Mgr{held("a"), {ID: "b", Current: true, Ready: true}, settled("c")},
			m: Map{Available: true, Active: "a", Standbys: []string{"c"}}, want: Step{Action: Failover, ID: "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Plan(tc.mgrs, tc.m, tc.failedOver)
			if got.Action != tc.want.Action || got.ID != tc.want.ID {
				t.Errorf("Plan = %s %q (%s); want %s %q", got.Action, got.ID, got.Why, tc.want.Action, tc.want.ID)
			}
			if got.Why == "" {
				t.Error("a step without a reason")
			}
		})
	}
}

func TestMgrOf(t *testing.T) {
	one := int32(1)
	d := func(mut func(d *appsv1.Deployment)) *appsv1.Deployment {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "rook-ceph-mgr-a", Generation: 3, Labels: map[string]string{contract.LabelApp: contract.AppName, contract.LabelMgrID: "a"}},
			Spec:       appsv1.DeploymentSpec{Replicas: &one},
			Status:     appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1},
		}
		mut(d)
		return d
	}
	for _, tc := range []struct {
		name string
		d    *appsv1.Deployment
		want Mgr
	}{
		{"rolled out", d(func(*appsv1.Deployment) {}), Mgr{ID: "a", Replicas: 1, Current: true, Ready: true}},
		{"not yet observed", d(func(d *appsv1.Deployment) { d.Generation = 4 }), Mgr{ID: "a", Replicas: 1}},
		{"held, its pod of the old template", d(func(d *appsv1.Deployment) {
			d.Spec.Paused = true
			d.Annotations = map[string]string{contract.AnnotationRolloutHold: contract.RolloutHoldStandbysFirst}
			d.Status.UpdatedReplicas = 0
		}), Mgr{ID: "a", Replicas: 1, Held: true, Ready: true}},
		{"paused by hand is not held", d(func(d *appsv1.Deployment) { d.Spec.Paused = true }), Mgr{ID: "a", Replicas: 1, Current: true, Ready: true}},
		{"the old pod still there beside the new", d(func(d *appsv1.Deployment) { d.Status.Replicas = 2 }), Mgr{ID: "a", Replicas: 1, Current: true}},
		{"past its progress deadline", d(func(d *appsv1.Deployment) {
			d.Status.UpdatedReplicas, d.Status.ReadyReplicas = 1, 0
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "timed out"}}
		}), Mgr{ID: "a", Replicas: 1, Current: true, Stalled: "timed out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MgrOf(tc.d); got != tc.want {
				t.Errorf("MgrOf = %+v; want %+v", got, tc.want)
			}
		})
	}
}

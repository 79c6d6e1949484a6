// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package roles

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rook-mgr/mgr-webhook/contract"
)

func TestPlanRoles(t *testing.T) {
	pod := func(name, id, role string) corev1.Pod {
		p := corev1.Pod{}
		p.Name, p.Labels = name, map[string]string{contract.LabelApp: contract.AppName, contract.LabelMgrID: id, "pod-template-hash": "5d8f"}
		if role != "" {
			p.Labels[contract.LabelMgrRole] = role
		}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rook-ceph-mgr-" + id + "-5d8f", UID: "rs", Controller: ptr.To(true)}}
		return p
	}
	// Pods with mgr a's labels that its Deployment does not run.
	copied := pod("copy-1", "a", "")
	copied.OwnerReferences[0].Name = "copy-of-mgr-a-5d8f"
	bare := pod("bare-1", "a", "")
	bare.OwnerReferences = nil
	notController := pod("nc-1", "a", "")
	notController.OwnerReferences[0].Controller = nil
	otherHash := pod("hash-1", "a", "")
	otherHash.Labels["pod-template-hash"] = "0000"
	deleting := pod("a-old", "a", "")
	deleting.DeletionTimestamp = &metav1.Time{}
	for name, tc := range map[string]struct {
		active string
		pods   []corev1.Pod
		want   []roleChange
	}{
		"first labels": {"a", []corev1.Pod{pod("a-1", "a", ""), pod("b-1", "b", "")},
			[]roleChange{{"a-1", "a", "active"}, {"b-1", "b", "standby"}}},
		"failover": {"b", []corev1.Pod{pod("a-1", "a", "active"), pod("b-1", "b", "standby")},
			[]roleChange{{"a-1", "a", "standby"}, {"b-1", "b", "active"}}},
		"at rest: nothing": {"a", []corev1.Pod{pod("a-1", "a", "active"), pod("b-1", "b", "standby")}, nil},
		"a hand-set wrong label is corrected": {"a", []corev1.Pod{pod("a-1", "a", "active"), pod("b-1", "b", "active")},
			[]roleChange{{"b-1", "b", "standby"}}},
		"no active mgr known: labels stay":                   {"", []corev1.Pod{pod("a-1", "a", "active"), pod("b-1", "b", "")}, nil},
		"pods being deleted and pods without an id are left": {"a", []corev1.Pod{deleting, pod("x", "", "")}, nil},
		"an active mgr without a pod here: every pod standby": {"c", []corev1.Pod{pod("a-1", "a", "active")},
			[]roleChange{{"a-1", "a", "standby"}}},
		"a pod of a mgr the controller does not manage (Rook's) is left":     {"a", []corev1.Pod{pod("a-1", "a", "active"), pod("r-1", "r", "")}, nil},
		"pods with a mgr's labels that its Deployment does not run are left": {"a", []corev1.Pod{pod("a-1", "a", "active"), copied, bare, notController, otherHash}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			owners := map[string]string{"a": "rook-ceph-mgr-a", "b": "rook-ceph-mgr-b", "c": "rook-ceph-mgr-c"}
			if got := planRoles(tc.active, owners, tc.pods); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("planRoles(%q) = %v, want %v", tc.active, got, tc.want)
			}
		})
	}
}

// TestPlanProbes: a cluster that answers is read each interval; one whose
// breaker is open when its clock says; never two reads of one at once; a
// cluster no longer asked is forgotten once its read ended.
func TestPlanProbes(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	interval := 5 * time.Second
	for name, tc := range map[string]struct {
		ask       []string
		states    map[string]probeState
		open      map[string]bool
		due, gone []string
	}{
		"new clusters are due":           {ask: []string{"b", "a"}, due: []string{"a", "b"}},
		"not before next":                {ask: []string{"a"}, states: map[string]probeState{"a": {next: t0.Add(2 * time.Second)}}},
		"next within the slack is due":   {ask: []string{"a"}, states: map[string]probeState{"a": {next: t0.Add(interval / 20)}}, due: []string{"a"}},
		"one read at a time":             {ask: []string{"a"}, states: map[string]probeState{"a": {inFlight: true, next: t0.Add(-time.Minute)}}},
		"open: due on the cluster clock": {ask: []string{"a"}, states: map[string]probeState{"a": {next: t0.Add(time.Minute)}}, open: map[string]bool{"a": true}, due: []string{"a"}},
		"open: not yet, whatever next":   {ask: []string{"a"}, states: map[string]probeState{"a": {next: t0.Add(-time.Minute)}}, open: map[string]bool{"a": false}},
		"open: one read at a time":       {ask: []string{"a"}, states: map[string]probeState{"a": {inFlight: true}}, open: map[string]bool{"a": true}},
		"gone when not asked":            {states: map[string]probeState{"a": {next: t0}}, gone: []string{"a"}},
		"kept while being read":          {states: map[string]probeState{"a": {inFlight: true}}},
	} {
		t.Run(name, func(t *testing.T) {
			ask := map[string]bool{}
			for _, ns := range tc.ask {
				ask[ns] = true
			}
			due, gone := planProbes(t0, interval/10, ask, tc.states, tc.open)
			if !reflect.DeepEqual(due, tc.due) || !reflect.DeepEqual(gone, tc.gone) {
				t.Errorf("due %v gone %v; want %v, %v", due, gone, tc.due, tc.gone)
			}
		})
	}
}

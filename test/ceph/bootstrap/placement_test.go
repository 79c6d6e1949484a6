// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// TestMgrsOfAClusterOnDifferentNodes: the mgrs completion writes keep apart
// on the real scheduler. Of one more mgr than the harness has nodes, each
// of the first runs on a node of its own and the last stays Pending, the
// scheduler's FailedScheduling Event naming the anti-affinity; a mgr of
// another cluster still finds a node. (The namespace is no Ceph cluster:
// scheduling is what is tested, not bootstrap, so the controller is told to
// leave them alone.)
func TestMgrsOfAClusterOnDifferentNodes(t *testing.T) {
	ctx := context.Background()
	const ns, other = "placement", "placement-other"
	for _, n := range []string{ns, other} {
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
		})
	}
	// Completed as the webhook completes them, and left alone by the
	// controller (no Ceph cluster here; its gauges stay the other tests').
	create := func(ns, id string) {
		d := mgrDeployment(t, ns, id, 1, nil)
		d.Labels[contract.LabelManaged] = "false"
		if err := k8s.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), d) })
	}
	ids := []string{"a", "b", "c", "d"}[:testenv.FakeNodes+1]
	for _, id := range ids {
		create(ns, id)
	}
	create(other, "a")
	podOf := func(ns, id string) (*corev1.Pod, error) {
		pods := &corev1.PodList{}
		if err := k8s.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{contract.LabelApp: contract.AppName, contract.LabelMgrID: id}); err != nil || len(pods.Items) != 1 {
			return nil, err
		}
		return &pods.Items[0], nil
	}
	nodes := map[string]string{} // node -> mgr id
	var pending *corev1.Pod
	eventually(t, 60*time.Second, "every mgr scheduled but one", func(context.Context) (bool, error) {
		clear(nodes)
		pending = nil
		for _, id := range ids {
			p, err := podOf(ns, id)
			if p == nil {
				return false, err
			}
			switch {
			case p.Spec.NodeName != "":
				nodes[p.Spec.NodeName] = id
			case pending == nil:
				pending = p
			default:
				return false, nil
			}
		}
		return len(nodes) == len(ids)-1 && pending != nil, nil
	})
	var reason string
	eventually(t, 30*time.Second, "a FailedScheduling Event for the mgr left over", func(context.Context) (bool, error) {
		events := &corev1.EventList{}
		if err := k8s.List(ctx, events, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == pending.Name && e.Reason == "FailedScheduling" {
				reason = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	if !strings.Contains(reason, "anti-affinity") {
		t.Errorf("FailedScheduling %q does not name the anti-affinity", reason)
	}
	if p, err := podOf(ns, pending.Labels[contract.LabelMgrID]); err != nil || p == nil || p.Spec.NodeName != "" {
		t.Errorf("the mgr left over: %v, %v; want it still Pending", p, err)
	}
	eventually(t, 30*time.Second, "the other cluster's mgr scheduled", func(context.Context) (bool, error) {
		p, err := podOf(other, "a")
		return p != nil && p.Spec.NodeName != "", err
	})
}

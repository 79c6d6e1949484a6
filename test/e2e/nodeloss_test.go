// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build node && kind

package e2e

// What only a cluster of several real nodes shows (hack/e2e-kind.sh: kind,
// built with -tags=node,kind): where the mgrs land and what happens when
// the node of the active mgr is lost. The suite loses a node with
// E2E_NODE_LOSS and brings it back with E2E_NODE_RESTORE, commands in which
// {} stands for the node's name (kind: docker pause {} / docker unpause {},
// every process of the node frozen, as a kernel hang or a cut link leaves it).

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// nodeCommand runs E2E_NODE_LOSS or E2E_NODE_RESTORE for node.
func nodeCommand(t *testing.T, variable, node string) {
	t.Helper()
	tmpl := os.Getenv(variable)
	if tmpl == "" || !strings.Contains(tmpl, "{}") {
		t.Fatalf("%s must be a command with {} for the node's name (kind: docker pause {}); it is %q", variable, tmpl)
	}
	cmd := exec.Command("sh", "-c", strings.ReplaceAll(tmpl, "{}", node))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s for %s: %v\n%s", variable, node, err, out)
	}
}

func node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// workers are the Ready nodes without the control-plane role.
func workers(t *testing.T) []string {
	t.Helper()
	nodes := &corev1.NodeList{}
	if err := env.Client.List(context.Background(), nodes); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range nodes.Items {
		if _, cp := n.Labels["node-role.kubernetes.io/control-plane"]; !cp && nodeReady(&n) && !n.Spec.Unschedulable {
			out = append(out, n.Name)
		}
	}
	return out
}

// TestNodeLoss: two mgrs of one cluster run on two nodes; the node of the
// active one is lost, under a steady stream of mgr writes. Ceph fails over
// to the standby, the pods' mgr_role labels and both Services follow within
// 15 s of the mgr map's change, the lost mgr's pod is replaced on a live
// node within 30 s of the node being marked unreachable (its 5 s
// toleration), the replacement joins Ceph as a standby, and no admission
// fails. Then, with every worker holding a mgr of the cluster, one more
// stays Pending and says why.
func TestNodeLoss(t *testing.T) {
	ctx := t.Context()
	ns := env.Teardown
	if w := workers(t); len(w) < 3 {
		t.Fatalf("%d Ready workers (%v): the test needs 3, one to lose and one to take its mgr", len(w), w)
	}
	// The mons keep to the control plane (test/ceph/kind/ceph-mon.yaml): a lost
	// worker must not take the test cluster's only mon.
	mons := &corev1.PodList{}
	if err := env.Client.List(ctx, mons, client.InNamespace(ns), client.MatchingLabels{"app": "rook-ceph-mon"}); err != nil || len(mons.Items) == 0 {
		t.Fatalf("the mon pods of %s: %v", ns, err)
	}
	for _, m := range mons.Items {
		if _, cp := node(t, m.Spec.NodeName).Labels["node-role.kubernetes.io/control-plane"]; !cp {
			t.Fatalf("mon pod %s runs on worker %s: losing a worker could take it", m.Name, m.Spec.NodeName)
		}
	}
	ids := []string{"e", "f"}
	for _, id := range ids {
		createMgr(t, ns, id)
	}
	for _, id := range ids {
		waitReady(t, ns, "rook-ceph-mgr-"+id)
	}
	e, f := mgrPod(t, ns, "e"), mgrPod(t, ns, "f")
	if e.Spec.NodeName == f.Spec.NodeName {
		t.Fatalf("mgrs e and f of one cluster share node %s", e.Spec.NodeName)
	}
	t.Logf("mgr e on %s, mgr f on %s", e.Spec.NodeName, f.Spec.NodeName)

	t.Run("the active mgr's node lost", func(t *testing.T) {
		before := activeWithStandby(t, ns, "e", "f")
		lost := mgrPod(t, ns, "e")
		load := startAdmissionLoad(t, env.Namespaces[1])
		webhooks := webhookPodsOn(t, lost.Spec.NodeName)
		lossAt := time.Now()
		restore := loseNode(t, lost.Spec.NodeName)

		_, changed := waitMgrMap(t, ns, "mgr f promoted", func(m mgrMap) bool {
			return m.Epoch > before.Epoch && m.Available && m.ActiveName == "f"
		})
		took, _ := waitActive(t, ns, "f", changed, 15*time.Second)
		t.Logf("node %s lost: Ceph made f active %s later; f labelled active and alone behind both Services %s after the mgr map said so",
			lost.Spec.NodeName, changed.Sub(lossAt).Round(100*time.Millisecond), took.Round(100*time.Millisecond))

		// The node controller taints the silent node unreachable; the mgr
		// pod's 5 s toleration then evicts it and its ReplicaSet's new pod
		// is scheduled on a live node.
		var tainted time.Time
		err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			for _, taint := range node(t, lost.Spec.NodeName).Spec.Taints {
				if taint.Key == corev1.TaintNodeUnreachable && taint.Effect == corev1.TaintEffectNoExecute && taint.TimeAdded != nil {
					tainted = taint.TimeAdded.Time
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("node %s never tainted %s", lost.Spec.NodeName, corev1.TaintNodeUnreachable)
		}
		var back *corev1.Pod
		err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			pods := &corev1.PodList{}
			if err := env.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{contract.LabelApp: contract.AppName, contract.LabelMgrID: "e"}); err != nil {
				return false, nil
			}
			for i, p := range pods.Items {
				if p.UID != lost.UID && p.DeletionTimestamp == nil && p.Spec.NodeName != "" {
					back = &pods.Items[i]
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("no new pod of mgr e scheduled within 2m of node %s's unreachable taint", lost.Spec.NodeName)
		}
		var scheduled time.Time
		for _, c := range back.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
				scheduled = c.LastTransitionTime.Time
			}
		}
		if back.Spec.NodeName == lost.Spec.NodeName || back.Spec.NodeName == f.Spec.NodeName {
			t.Errorf("mgr e's new pod %s was put on %s (lost: %s, mgr f's: %s)", back.Name, back.Spec.NodeName, lost.Spec.NodeName, f.Spec.NodeName)
		}
		// Both times are the API server's, to the second.
		if d := scheduled.Sub(tainted); d > 30*time.Second {
			t.Errorf("mgr e's new pod scheduled %s after node %s was tainted unreachable; want within 30s", d, lost.Spec.NodeName)
		}
		t.Logf("node %s tainted unreachable %s after it was lost; mgr e's new pod %s scheduled on %s %s after the taint",
			lost.Spec.NodeName, tainted.Sub(lossAt).Round(time.Second), back.Name, back.Spec.NodeName, scheduled.Sub(tainted).Round(time.Second))
		rejoined(t, ns, back, "f")
		endNodeLoss(t, load, lost.Spec.NodeName, webhooks)

		restore() // and waits until the node is Ready again
	})

	t.Run("a mgr with no node left stays Pending", func(t *testing.T) {
		// One more mgr than there are workers without one of this cluster.
		taken := map[string]bool{}
		for _, id := range ids {
			taken[mgrPod(t, ns, id).Spec.NodeName] = true
		}
		var extra []string
		for i := range len(workers(t)) - len(taken) + 1 {
			extra = append(extra, string(rune('g'+i)))
		}
		for _, id := range extra {
			createMgr(t, ns, id)
		}
		var note string
		err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			pods := &corev1.PodList{}
			if err := env.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
				return false, nil
			}
			pending, placed := []corev1.Pod{}, map[string]string{}
			for _, p := range pods.Items {
				switch {
				case p.DeletionTimestamp != nil:
				case p.Spec.NodeName == "":
					pending = append(pending, p)
				default:
					if other, dup := placed[p.Spec.NodeName]; dup {
						return false, fmt.Errorf("mgrs %s and %s share node %s", other, p.Labels[contract.LabelMgrID], p.Spec.NodeName)
					}
					placed[p.Spec.NodeName] = p.Labels[contract.LabelMgrID]
				}
			}
			if len(pending) != 1 {
				return false, nil
			}
			events := &corev1.EventList{}
			if err := env.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
				return false, nil
			}
			for _, ev := range events.Items {
				if ev.InvolvedObject.Name == pending[0].Name && ev.Reason == "FailedScheduling" {
					note = ev.Message
					return strings.Contains(note, "anti-affinity"), nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("not one mgr Pending with a FailedScheduling Event naming the anti-affinity (%v); last Event: %q", err, note)
		}
		t.Logf("mgrs %v added: one stays Pending: %s", extra, note)
	})
}

// loseNode freezes node under a steady stream of mgr writes and returns a
// func that brings it back and waits until it is Ready again.
func loseNode(t *testing.T, name string) (restore func()) {
	t.Helper()
	nodeCommand(t, "E2E_NODE_LOSS", name)
	done := false
	restore = func() {
		if done {
			return
		}
		done = true
		nodeCommand(t, "E2E_NODE_RESTORE", name)
		err := wait.PollUntilContextTimeout(context.Background(), time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			return nodeReady(node(t, name)), nil
		})
		if err != nil {
			t.Fatalf("node %s not Ready again within 3m of its restore", name)
		}
	}
	t.Cleanup(restore)
	return restore
}

// TestComponentNodeLoss: the install's own replicas are spread over nodes,
// and losing the node of one costs nothing: with the controller's leader
// lost, another replica takes the lease within the lease's duration and
// bootstraps a mgr created meanwhile; with a webhook replica's node lost,
// no mgr write fails (failurePolicy Fail) while the node is silent and
// until its pods are marked unready.
func TestComponentNodeLoss(t *testing.T) {
	ctx := t.Context()
	webhookAvailable(t)
	spread := func(name string) map[string]string {
		pods := &corev1.PodList{}
		if err := env.Client.List(ctx, pods, client.InNamespace(systemNamespace), client.MatchingLabels{"app.kubernetes.io/name": name}); err != nil {
			t.Fatal(err)
		}
		nodes := map[string]string{} // node -> pod
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			if other, ok := nodes[p.Spec.NodeName]; ok {
				t.Errorf("%s replicas %s and %s share node %s", name, other, p.Name, p.Spec.NodeName)
			}
			nodes[p.Spec.NodeName] = p.Name
		}
		if len(nodes) < 2 {
			t.Errorf("%s runs on %d node(s): %v; the release runs 2 replicas, preferably apart", name, len(nodes), nodes)
		}
		return nodes
	}
	spread("mgr-webhook")
	spread("mgr-bootstrap")

	t.Run("the controller leader's node", func(t *testing.T) {
		lease := &coordinationv1.Lease{}
		key := client.ObjectKey{Namespace: systemNamespace, Name: "mgr-bootstrap.mgr.ceph.rook.io"}
		if err := env.Client.Get(ctx, key, lease); err != nil || lease.Spec.HolderIdentity == nil || lease.Spec.LeaseDurationSeconds == nil {
			t.Fatalf("the controller's lease: %v %+v", err, lease.Spec)
		}
		leader := strings.SplitN(*lease.Spec.HolderIdentity, "_", 2)[0]
		pod := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: leader}, pod); err != nil {
			t.Fatal(err)
		}
		load := startAdmissionLoad(t, env.Namespaces[1])
		webhooks := webhookPodsOn(t, pod.Spec.NodeName)
		restore := loseNode(t, pod.Spec.NodeName)
		lostAt := time.Now()
		var renewed time.Time
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			if err := env.Client.Get(ctx, key, lease); err != nil || lease.Spec.HolderIdentity == nil {
				return false, nil
			}
			if strings.HasPrefix(*lease.Spec.HolderIdentity, leader+"_") {
				renewed = lease.Spec.RenewTime.Time // the old leader's last renewal
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("the lease still held by %s 2m after its node %s was lost", leader, pod.Spec.NodeName)
		}
		duration := time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
		took := lease.Spec.AcquireTime.Sub(renewed)
		t.Logf("node %s lost with the leader %s: %s took the lease %s after the old leader's last renewal (lease %s), %s after the loss",
			pod.Spec.NodeName, leader, *lease.Spec.HolderIdentity, took.Round(100*time.Millisecond), duration, lease.Spec.AcquireTime.Sub(lostAt).Round(time.Second))
		// A replica counts the lease's duration from when it saw the last
		// renewal, and it looks once a retry period (2 s) stretched by
		// client-go's jitter (up to 2.2×): seeing the last renewal late and
		// trying after the lease ran out each cost at most one such period.
		if bound := duration + 2*jitteredRetry + time.Second; took > bound {
			t.Errorf("the lease taken %s after the old leader's last renewal; want within %s (its duration %s and two jittered retry periods)", took, bound, duration)
		}
		// The new leader bootstraps a mgr created while the node is lost.
		ns := env.Teardown
		createMgr(t, ns, "i")
		waitReady(t, ns, "rook-ceph-mgr-i")
		endNodeLoss(t, load, pod.Spec.NodeName, webhooks)
		restore()
	})

	t.Run("a webhook replica's node", func(t *testing.T) {
		webhookAvailable(t)
		pods := webhookPods(t)
		if len(pods) == 0 {
			t.Fatal("no webhook pod")
		}
		lost := pods[0]
		load := startAdmissionLoad(t, env.Namespaces[1])
		waitSent(t, load, 20)
		restore := loseNode(t, lost.Spec.NodeName)
		endNodeLoss(t, load, lost.Spec.NodeName, []corev1.Pod{lost})
		restore()
	})
}

// jitteredRetry is the longest wait between two looks at the lease: the
// controller's --leader-elect-retry-period as shipped (2 s) with client-go
// leaderelection's JitterFactor 1.2.
const jitteredRetry = 2 * time.Second * 22 / 10

// webhookTimeout is the shipped webhooks' timeoutSeconds.
const webhookTimeout = 5 * time.Second

// webhookPodsOn are the webhook's live pods on node.
func webhookPodsOn(t *testing.T, node string) []corev1.Pod {
	t.Helper()
	var on []corev1.Pod
	for _, p := range webhookPods(t) {
		if p.Spec.NodeName == node {
			on = append(on, p)
		}
	}
	return on
}

// endNodeLoss ends the admission load run while node was lost, webhooks
// being the webhook's pods that were on it. With none there, no write may
// fail. With one there, the API server keeps calling it (failurePolicy Fail)
// until the node controller marks it unready: a write that meets it fails
// with the webhook's timeout (5 s), and no write may fail in any other way
// or later than one timeout after the pod was marked unready. Kubernetes
// gives the API server no retry, so that window is the price of a lost
// replica; the count is reported.
func endNodeLoss(t *testing.T, l *admissionLoad, node string, webhooks []corev1.Pod) {
	t.Helper()
	what := fmt.Sprintf("mgr writes while node %s was lost", node)
	if len(webhooks) == 0 {
		l.end(t, what+" (no webhook replica on it)")
		return
	}
	var unready time.Time
	for _, w := range webhooks {
		err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			p := &corev1.Pod{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&w), p); err != nil || podReady(p) {
				return false, nil
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.LastTransitionTime.After(unready) {
					unready = c.LastTransitionTime.Time
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("webhook pod %s on lost node %s still Ready after 3m", w.Name, node)
		}
	}
	// Writes go on after the replica is out of the Service.
	waitSent(t, l, l.sent.Load()+40)
	l.stop()
	l.done.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	// The Ready condition's time is the API server's, to the second.
	deadline := unready.Add(webhookTimeout + time.Second)
	for _, f := range l.failures {
		if !strings.Contains(f.err, "context deadline exceeded") || f.at.After(deadline) {
			t.Errorf("%s: a write failed at %s (replica %s marked unready at %s): %s", what, f.at.Format(time.RFC3339), webhooks[0].Name, unready.Format(time.RFC3339), f.err)
		}
	}
	if l.sent.Load() == 0 {
		t.Errorf("%s: no write sent", what)
	}
	t.Logf("%s, with webhook replica %s on it: %d writes, %d failed on the webhook's %s timeout, none later than that after the replica was marked unready (%s)",
		what, webhooks[0].Name, l.sent.Load(), len(l.failures), webhookTimeout, unready.Format(time.RFC3339))
}

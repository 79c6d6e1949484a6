// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build node && kind

package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// beaconGrace is Ceph's mon_mgr_beacon_grace: how long the mons wait for a
// silent active mgr before they promote a standby.
const beaconGrace = 30 * time.Second

// TestDrain: `kubectl drain` of the active mgr's node, as node maintenance
// runs it. The mgr's preStop hook hands the active role over: Ceph makes the
// standby active within seconds of the eviction and before the drained pod
// is gone (without the hook the mons wait out their 30 s beacon grace), the
// roles and Services follow, and the pod stops well inside its grace period. The PodDisruptionBudget refuses to evict the
// new active mgr while the drained one's replacement is not Ready, and
// allows it once it is; the replacement lands on another node and stands by.
func TestDrain(t *testing.T) {
	ctx := context.Background()
	ns := env.Teardown
	if w := workers(t); len(w) < 3 {
		t.Fatalf("%d Ready workers (%v): the test needs 3, one to drain and one to take its mgr", len(w), w)
	}
	for _, id := range []string{"j", "k"} {
		createMgr(t, ns, id)
	}
	for _, id := range []string{"j", "k"} {
		waitReady(t, ns, "rook-ceph-mgr-"+id)
	}
	pdb := &policyv1.PodDisruptionBudget{}
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: bootstrap.PDBName}, pdb) == nil && pdb.Status.DisruptionsAllowed == 1, nil
	})
	if err != nil {
		t.Fatalf("PodDisruptionBudget %s of %s never allowed one disruption: %+v", bootstrap.PDBName, ns, pdb.Status)
	}
	before := activeWithStandby(t, ns, "j", "k")
	drained, standby := mgrPod(t, ns, "j"), mgrPod(t, ns, "k")
	if drained.Spec.NodeName == standby.Spec.NodeName {
		t.Fatalf("mgrs j and k share node %s", drained.Spec.NodeName)
	}
	nodeName := drained.Spec.NodeName
	t.Cleanup(func() {
		if out, err := env.kubectl(t, nil, "uncordon", nodeName); err != nil {
			t.Errorf("uncordon %s: %v\n%s", nodeName, err, out)
		}
	})

	// The old pod's end, seen from the API server (polled, 200 ms).
	var gone time.Time
	var watching sync.WaitGroup
	watching.Go(func() {
		_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(drained), &corev1.Pod{})
			if apierrors.IsNotFound(err) {
				gone = time.Now()
				return true, nil
			}
			return false, nil
		})
	})
	var drainOut string
	var drainErr error
	var draining sync.WaitGroup
	draining.Go(func() {
		drainOut, drainErr = env.kubectl(t, nil, "drain", nodeName, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=3m",
			"--pod-selector="+contract.LabelApp+"="+contract.AppName+","+contract.LabelRookCluster+"="+ns)
	})

	// Evicted: the API server sets the deletion time grace seconds ahead.
	var evicted time.Time
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(drained), p); err != nil || p.DeletionTimestamp == nil {
			return apierrors.IsNotFound(err), nil
		}
		evicted = p.DeletionTimestamp.Add(-time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)
		return true, nil
	})
	if err != nil || evicted.IsZero() {
		t.Fatalf("mgr j's pod %s on %s not evicted within 1m of the drain (%v)", drained.Name, nodeName, err)
	}

	// While j's replacement is not Ready, the budget refuses k's eviction
	// (dry run: the refusal is the answer).
	dryRun := func() error {
		return env.Client.SubResource("eviction").Create(ctx, standby, &policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Name: standby.Name, Namespace: ns},
			DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}},
		})
	}
	if err := dryRun(); !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "disruption budget") {
		t.Errorf("evicting mgr k's pod while mgr j's replacement is not Ready: %v; want the disruption budget's refusal (429)", err)
	}

	m, seen := waitMgrMap(t, ns, "mgr k promoted", func(m mgrMap) bool {
		return m.Epoch > before.Epoch && m.Available && m.ActiveName == "k"
	})
	changed, err := time.Parse("2006-01-02T15:04:05.999999-0700", m.ActiveChange)
	if err != nil {
		t.Fatalf("the mgr map's active_change %q: %v", m.ActiveChange, err)
	}
	took, _ := waitActive(t, ns, "k", seen, 15*time.Second)
	watching.Wait()
	draining.Wait()
	if drainErr != nil {
		t.Fatalf("kubectl drain %s: %v\n%s", nodeName, drainErr, drainOut)
	}
	// The mons' and the API server's clocks are this machine's (kind).
	handOver := changed.Sub(evicted)
	t.Logf("node %s drained: Ceph made k active %s after j's pod was evicted, %s before it was gone (%s after the eviction); k labelled active and alone behind both Services %s after the mgr map said so",
		nodeName, handOver.Round(100*time.Millisecond), gone.Sub(changed).Round(100*time.Millisecond), gone.Sub(evicted).Round(100*time.Millisecond), took.Round(100*time.Millisecond))
	if gone.IsZero() || !changed.Before(gone) {
		t.Errorf("mgr k became active at %s, mgr j's pod gone at %s: the standby must take over before the drained mgr stops", changed, gone)
	}
	// The hook returns once the failed daemon has respawned and can take
	// SIGTERM; before, its pod was held for the whole 30 s grace period.
	if held := gone.Sub(evicted); held > 20*time.Second {
		t.Errorf("mgr j's pod gone %s after its eviction; the hand-over must leave it able to stop on SIGTERM (want within 20s, not its 30s grace period)", held)
	}
	// One second for the deletion time's precision.
	if handOver > 10*time.Second+time.Second {
		t.Errorf("mgr k active %s after the eviction; the hand-over must beat Ceph's %s beacon grace by far (want within 10s)", handOver, beaconGrace)
	}
	events := &corev1.EventList{}
	if err := env.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		if ev.InvolvedObject.UID == drained.UID && ev.Reason == "FailedPreStopHook" {
			t.Errorf("mgr j's preStop hook failed: %s", ev.Message)
		}
	}

	back := mgrPod(t, ns, "j")
	if back.Spec.NodeName == nodeName || back.Spec.NodeName == standby.Spec.NodeName {
		t.Errorf("mgr j's new pod %s was put on %s (drained: %s, mgr k's: %s)", back.Name, back.Spec.NodeName, nodeName, standby.Spec.NodeName)
	}
	rejoined(t, ns, back, "k")
	// Both Ready again: the budget allows one eviction (the disruption
	// controller's count follows within seconds).
	var last error
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(context.Context) (bool, error) {
		last = dryRun()
		return last == nil, nil
	})
	if err != nil {
		t.Errorf("evicting mgr k's pod with mgr j's replacement Ready: %v; the budget allows one", last)
	}
	t.Logf("mgr j's new pod %s on %s, standing by; the budget refused k's eviction until it was Ready", back.Name, back.Spec.NodeName)
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// roles are the mgr_role labels of the namespace's mgr pods, by mgr id.
func roles(ctx context.Context, ns string) map[string]string {
	pods := &corev1.PodList{}
	if err := env.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
		return nil
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Labels[contract.LabelMgrID]] = p.Labels[contract.LabelMgrRole]
		}
	}
	return out
}

// endpoints are the ready endpoints of Service name: the mgr ids of the pods
// behind it and the port each is reached on.
func endpoints(ctx context.Context, ns, name string) map[string]int32 {
	slices := &discoveryv1.EndpointSliceList{}
	if err := env.Client.List(ctx, slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: name}); err != nil {
		return nil
	}
	out := map[string]int32{}
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.TargetRef == nil || e.Conditions.Ready == nil || !*e.Conditions.Ready || len(s.Ports) == 0 || s.Ports[0].Port == nil {
				continue
			}
			pod := &corev1.Pod{}
			if env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: e.TargetRef.Name}, pod) == nil {
				out[pod.Labels[contract.LabelMgrID]] = *s.Ports[0].Port
			}
		}
	}
	return out
}

// mgrMap is the part of `ceph mgr dump` the failover checks read.
type mgrMap struct {
	Epoch      int    `json:"epoch"`
	Available  bool   `json:"available"`
	ActiveName string `json:"active_name"`
	ActiveGID  uint64 `json:"active_gid"`
	// ActiveChange is when the mons last changed the active mgr (their
	// clock, microseconds).
	ActiveChange string `json:"active_change"`
	Standbys     []struct {
		Name string `json:"name"`
	} `json:"standbys"`
}

func (m mgrMap) standby(id string) bool {
	for _, s := range m.Standbys {
		if s.Name == id {
			return true
		}
	}
	return false
}

// waitMgrMap waits until the cluster's mgr map satisfies cond and returns
// the map and when it was first seen so. The bound is generous because it is
// Ceph's time, not a promise of ours (a failed mgr respawns and rejoins as a
// standby in 4-10 s here): what the suite times starts from the moment the
// map shows the change.
func waitMgrMap(t *testing.T, ns, what string, cond func(mgrMap) bool) (mgrMap, time.Time) {
	t.Helper()
	var m mgrMap
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		// One call at most 15 s: the controller pod it runs in may sit on a
		// node just lost, which still looks Ready; the next try uses another.
		callCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
		out, err := env.Ceph(callCtx, ns, "mgr", "dump")
		cancel()
		if err != nil {
			if ctx.Err() == nil { // not the call the deadline cut short
				last = err.Error()
			}
			return false, nil
		}
		m = mgrMap{}
		if err := json.Unmarshal(out, &m); err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("epoch %d, available %t, active %q, standbys %v", m.Epoch, m.Available, m.ActiveName, m.Standbys)
		return cond(m), nil
	})
	if err != nil {
		t.Fatalf("mgr map of %s: %s not seen within 2m: %s", ns, what, last)
	}
	return m, time.Now()
}

// waitActive waits until the namespace's pods say id alone is active and
// both cluster Services have its pod as their only endpoint, at most bound
// after since (when the mgr map showed id active); it returns how long after
// since that was and the metrics endpoint's port.
func waitActive(t *testing.T, ns, id string, since time.Time, bound time.Duration) (time.Duration, int32) {
	t.Helper()
	var port int32
	var last string
	ctx, cancel := context.WithDeadline(t.Context(), since.Add(bound))
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		r := roles(ctx, ns)
		metrics := endpoints(ctx, ns, contract.MetricsServiceName)
		dash := endpoints(ctx, ns, contract.DashboardServiceName)
		last = fmt.Sprintf("roles %v, metrics endpoints %v, dashboard endpoints %v", r, metrics, dash)
		for other, role := range r {
			if (other == id) != (role == contract.RoleActive) {
				return false, nil
			}
		}
		_, okM := metrics[id]
		_, okD := dash[id]
		port = metrics[id]
		return r[id] == contract.RoleActive && len(metrics) == 1 && okM && len(dash) == 1 && okD, nil
	})
	if err != nil {
		t.Fatalf("mgr %s not the one behind the Services within %s of the mgr map saying so: %s", id, bound, last)
	}
	return time.Since(since), port
}

// makeActive brings the cluster to id active with other standing by, and
// returns when the mgr map first said id is active. Which mgr is active
// before is Ceph's choice: every module enable restarts the active mgr, and
// the standby may take over meanwhile.
func makeActive(t *testing.T, ns, id, other string) time.Time {
	t.Helper()
	m, seen := waitMgrMap(t, ns, fmt.Sprintf("mgrs %s and %s, one active and the other standing by", id, other), func(m mgrMap) bool {
		return m.Available && (m.ActiveName == id && m.standby(other) || m.ActiveName == other && m.standby(id))
	})
	if m.ActiveName == id {
		return seen
	}
	if _, err := env.Ceph(context.Background(), ns, "mgr", "fail", other); err != nil {
		t.Fatal(err)
	}
	_, seen = waitMgrMap(t, ns, fmt.Sprintf("mgr %s promoted", id), func(n mgrMap) bool {
		return n.Epoch > m.Epoch && n.Available && n.ActiveName == id
	})
	return seen
}

// failover: `ceph mgr fail` moves the active mgr; within 15 s the pods'
// mgr_role labels and both Services follow, and the metrics reached through
// the Service's endpoint are the new active mgr's. A hand-set wrong label is
// corrected. Runs with mgrs a and b Ready in ns (either active), and leaves a active.
func failover(t *testing.T, ns string) {
	ctx := t.Context()
	seen := makeActive(t, ns, "a", "b")
	waitActive(t, ns, "a", seen, 15*time.Second)
	start, calls0 := time.Now(), cephCalls(t, "mgr stat")

	for _, step := range []struct{ fail, active string }{{"a", "b"}, {"b", "a"}} {
		// Failing the active mgr while the other is not yet a standby (it
		// restarts after its own failover) leaves Ceph none to promote.
		before, _ := waitMgrMap(t, ns, fmt.Sprintf("mgr %s active with %s standing by", step.fail, step.active), func(m mgrMap) bool {
			return m.Available && m.ActiveName == step.fail && m.standby(step.active)
		})
		if _, err := env.Ceph(ctx, ns, "mgr", "fail", step.fail); err != nil {
			t.Fatal(err)
		}
		_, changed := waitMgrMap(t, ns, fmt.Sprintf("mgr %s promoted", step.active), func(m mgrMap) bool {
			return m.Epoch > before.Epoch && m.Available && m.ActiveName == step.active
		})
		took, port := waitActive(t, ns, step.active, changed, 15*time.Second)
		t.Logf("ceph mgr fail %s: mgr %s labelled active and alone behind both Services %s after the mgr map said so", step.fail, step.active, took.Round(100*time.Millisecond))
		body := ""
		err := wait.PollUntilContextTimeout(ctx, time.Second, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			body, err = env.Metrics(ctx, ns, port)
			return err == nil && strings.Contains(body, "ceph_health_status"), nil
		})
		if err != nil {
			t.Errorf("metrics of mgr %s through the Service (endpoint port %d): no ceph_health_status: %.200s", step.active, port, body)
		}
	}

	// A wrong label set by hand is corrected.
	pods := &corev1.PodList{}
	if err := env.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{contract.LabelMgrID: "b"}); err != nil || len(pods.Items) == 0 {
		t.Fatalf("mgr b's pod: %v", err)
	}
	p := &pods.Items[0]
	patch := client.MergeFrom(p.DeepCopy())
	p.Labels[contract.LabelMgrRole] = contract.RoleActive
	if err := env.Client.Patch(ctx, p, patch); err != nil {
		t.Fatal(err)
	}
	took, _ := waitActive(t, ns, "a", time.Now(), 15*time.Second)
	t.Logf("a hand-set mgr_role=active on standby b corrected in %s", took.Round(100*time.Millisecond))
	if calls0 >= 0 {
		elapsed := time.Since(start)
		calls := cephCalls(t, "mgr stat") - calls0
		t.Logf("the role watcher: %.0f `ceph mgr stat` calls in %s, %.1f per minute (one cluster with two mgrs)", calls, elapsed.Round(100*time.Millisecond), calls/elapsed.Minutes())
		// One per --mgr-role-interval (5 s), whatever happened meanwhile.
		if max := elapsed.Seconds()/5 + 2; calls > max {
			t.Errorf("%.0f mgr stat calls in %s; want at most %.0f (one per 5 s)", calls, elapsed, max)
		}
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build node && kind

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// mgrStatSample is one `ceph mgr stat`, on the clock of the pod that asked.
type mgrStatSample struct {
	At        float64 `json:"t"`
	OK        bool    `json:"ok"`
	Available bool    `json:"available"`
	Active    string  `json:"active"`
	Err       string  `json:"err"`
}

// mgrStatWatcher asks the mons for the mgr map's summary every 200 ms, over
// one librados connection from the controller's pod (python3-rados, which
// its ceph CLI runs on), the admin keyring on stdin.
const mgrStatWatcher = `
import json, os, shutil, sys, tempfile, time, rados
os.umask(0o077)
d = tempfile.mkdtemp()
with open(d + "/keyring", "w") as f:
    f.write(sys.stdin.read())
with open(d + "/conf", "w") as f:
    f.write("[global]\nmon_host = %s\nkeyring = %s/keyring\n" % (os.environ["MON"], d))
r = rados.Rados(conffile=d + "/conf", name="client.admin")
try:
    r.connect(timeout=15)
finally:
    shutil.rmtree(d)  # connected or not, the key leaves the pod's disk
while True:
    t = time.time()
    s = {"t": t, "ok": False}
    try:
        ret, out, err = r.mon_command(json.dumps({"prefix": "mgr stat", "format": "json"}), b"", timeout=5)
        if ret == 0:
            m = json.loads(out)
            s.update(ok=True, available=m.get("available", False), active=m.get("active_name", ""))
        else:
            s["err"] = "%d %s" % (ret, err)
    except Exception as e:
        s["err"] = str(e)
    print(json.dumps(s), flush=True)
    time.sleep(max(0.0, 0.2 - (time.time() - t)))
`

// watchMgrStat samples ns's mgr map every 200 ms until the returned stop
// is called, which returns the samples.
func watchMgrStat(t *testing.T, ns string) (stop func() []mgrStatSample) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	conn, err := connOf(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := env.livePod(ctx, "mgr-bootstrap")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, env.Kubectl, "--kubeconfig", env.Kubeconfig, "exec", "-i", "-n", systemNamespace, pod, "--",
		"env", "MON="+conn.MonHost, "python3", "-u", "-c", mgrStatWatcher)
	cmd.Stdin = bytes.NewReader(conn.AdminKeyring)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var samples []mgrStatSample
	var reading sync.WaitGroup
	reading.Go(func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var s mgrStatSample
			if json.Unmarshal(sc.Bytes(), &s) == nil {
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}
		}
	})
	// The first answer: the watcher runs.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(samples) > 0, nil
	})
	if err != nil {
		cancel()
		t.Fatalf("the mgr stat watcher in %s never answered: %s", pod, stderr.String())
	}
	// stop takes two more samples first: the last state the caller waited
	// for is in the record.
	return func() []mgrStatSample {
		mu.Lock()
		n := len(samples)
		mu.Unlock()
		_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			return len(samples) >= n+2, nil
		})
		cancel()
		_ = cmd.Wait()
		reading.Wait()
		mu.Lock()
		defer mu.Unlock()
		return samples
	}
}

// availability is what a run of samples says: the changes of active mgr,
// the longest time no mgr was available (from the last sample that saw one
// to the next), and the samples that failed.
type availability struct {
	changes  []string // "a->b"
	longest  time.Duration
	failed   int
	lastSeen string
}

func availabilityOf(samples []mgrStatSample) availability {
	var a availability
	var active string
	var lastUp float64
	for _, s := range samples {
		if !s.OK {
			a.failed++
			continue
		}
		up := s.Available && s.Active != ""
		if up {
			if lastUp != 0 {
				if gap := time.Duration((s.At - lastUp) * float64(time.Second)); gap > a.longest {
					a.longest = gap
				}
			}
			lastUp = s.At
			if active != "" && s.Active != active {
				a.changes = append(a.changes, active+"->"+s.Active)
			}
			active = s.Active
		}
	}
	a.lastSeen = active
	return a
}

// rolledOut waits until every mgr of ids runs a pod of its Deployment's
// template other than the pods before (by UID), Ready, none paused or held,
// and the mgr map shows one active and the others standing by.
func rolledOut(t *testing.T, ns string, ids []string, before map[string]types.UID, bound time.Duration) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, bound, true, func(ctx context.Context) (bool, error) {
		for _, id := range ids {
			d := &appsv1.Deployment{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: contract.DeploymentName(id)}, d); err != nil {
				last = err.Error()
				return false, nil
			}
			st := d.Status
			if d.Spec.Paused || d.Annotations[contract.AnnotationRolloutHold] != "" || st.ObservedGeneration < d.Generation ||
				st.UpdatedReplicas != 1 || st.ReadyReplicas != 1 || st.Replicas != 1 {
				last = fmt.Sprintf("mgr %s: paused %t, hold %q, generation %d observed %d, replicas %d updated %d ready %d", id, d.Spec.Paused,
					d.Annotations[contract.AnnotationRolloutHold], d.Generation, st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.ReadyReplicas)
				return false, nil
			}
			pods := &corev1.PodList{}
			if err := env.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{contract.LabelMgrID: id}); err != nil {
				return false, nil
			}
			for _, p := range pods.Items {
				if p.UID == before[id] {
					last = fmt.Sprintf("mgr %s still runs pod %s", id, p.Name)
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("mgrs %v of %s not rolled out within %s: %s", ids, ns, bound, last)
	}
	waitMgrMap(t, ns, fmt.Sprintf("mgrs %v, one active and the others standing by", ids), func(m mgrMap) bool {
		n := 0
		for _, id := range ids {
			if m.standby(id) {
				n++
			}
		}
		return m.Available && slices.Contains(ids, m.ActiveName) && n == len(ids)-1
	})
}

// podUIDs are the live pods of mgrs ids, by id.
func podUIDs(t *testing.T, ns string, ids []string) map[string]types.UID {
	t.Helper()
	uids := map[string]types.UID{}
	for _, id := range ids {
		uids[id] = mgrPod(t, ns, id).UID
	}
	return uids
}

// standbysRecorded waits until the controller's CephRelease of ns records
// n standby mgrs: the webhook holds a change only while it does.
func standbysRecorded(t *testing.T, ns string, n int) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 2*time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		f, err := recorded(t, ns)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%d standbys", f.Standbys)
		return f.Standbys == n, nil
	})
	if err != nil {
		t.Fatalf("CephRelease %s never recorded %d standby mgrs: %s", ns, n, last)
	}
}

// eventsOf are the reasons and notes of the Events on Deployment name since.
func eventsOf(t *testing.T, ns, name string, since time.Time) []string {
	t.Helper()
	events := &corev1.EventList{}
	if err := env.Client.List(t.Context(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range events.Items {
		at := e.EventTime.Time
		if at.IsZero() {
			at = e.LastTimestamp.Time
		}
		if e.InvolvedObject.Kind == "Deployment" && e.InvolvedObject.Name == name && !at.Before(since.Add(-time.Second)) {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

// TestStandbyFirstRollout: `kubectl rollout restart` of every mgr of a
// cluster at once, as one GitOps sync would change them all, with two and
// with three real mgrs. The webhook holds each change; the controller rolls
// the standbys first, one at a time, fails the active over once and then
// rolls it (docs/rollouts.md). Sampled every 200 ms: exactly one change of
// active mgr per rollout, and never more than 2 s without an available mgr.
// Then a standby that can never run its new pod (no node matches it) stalls
// the rollout: the active keeps its pod and says so in an Event and its
// status, and once the change is taken back everything runs again with no
// failover at all.
func TestStandbyFirstRollout(t *testing.T) {
	ns := env.Teardown
	if w := workers(t); len(w) < 3 {
		t.Fatalf("%d Ready workers (%v): three mgrs need three", len(w), w)
	}
	ids := []string{"r", "s", "t"}
	for _, id := range ids[:2] {
		createMgr(t, ns, id)
		explainOnFailure(t, ns, contract.DeploymentName(id))
	}
	for _, id := range ids[:2] {
		waitReady(t, ns, contract.DeploymentName(id))
	}

	rollAll := func(t *testing.T, ids []string) {
		t.Helper()
		standbysRecorded(t, ns, len(ids)-1)
		before, _ := waitMgrMap(t, ns, fmt.Sprintf("mgrs %v, one active and the others standing by", ids), func(m mgrMap) bool {
			return m.Available && slices.Contains(ids, m.ActiveName) && len(m.Standbys) == len(ids)-1
		})
		pods := podUIDs(t, ns, ids)
		stop := watchMgrStat(t, ns)
		start := time.Now()
		args := []string{"rollout", "restart", "-n", ns}
		for _, id := range ids {
			args = append(args, "deployment/"+contract.DeploymentName(id))
		}
		if out, err := env.kubectl(t, nil, args...); err != nil {
			stop()
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		rolledOut(t, ns, ids, pods, time.Duration(len(ids))*3*time.Minute)
		a := availabilityOf(stop())
		took := time.Since(start).Round(time.Second)
		t.Logf("rollout of %v (active %s before): %s; active changes %v, longest without an available mgr %s, %d failed samples",
			ids, before.ActiveName, took, a.changes, a.longest.Round(10*time.Millisecond), a.failed)
		if len(a.changes) != 1 {
			t.Errorf("active mgr changes %v during the rollout; want exactly one", a.changes)
		}
		if a.longest > 2*time.Second {
			t.Errorf("no mgr available for %s during the rollout; want at most 2s", a.longest)
		}
		if a.failed > 0 {
			t.Errorf("%d samples of the mgr map failed: the measure has holes", a.failed)
		}
		if notes := eventsOf(t, ns, contract.DeploymentName(before.ActiveName), start); !slices.ContainsFunc(notes, func(n string) bool {
			return strings.HasPrefix(n, bootstrap.ReasonRolloutFailedOver+":")
		}) {
			t.Errorf("no %s Event on the active mgr %s: %v", bootstrap.ReasonRolloutFailedOver, before.ActiveName, notes)
		}
	}
	t.Run("two mgrs", func(t *testing.T) { rollAll(t, ids[:2]) })

	createMgr(t, ns, ids[2])
	explainOnFailure(t, ns, contract.DeploymentName(ids[2]))
	waitReady(t, ns, contract.DeploymentName(ids[2]))
	t.Run("three mgrs", func(t *testing.T) { rollAll(t, ids) })

	t.Run("a standby that never runs its new pod stalls the rollout", func(t *testing.T) {
		ctx := t.Context()
		standbysRecorded(t, ns, 2)
		// Whichever mgr is active stays so; the standbys roll by name, so
		// the first of them is the one that stalls.
		m, _ := waitMgrMap(t, ns, "one of r, s, t active and the others standing by", func(m mgrMap) bool {
			return m.Available && slices.Contains(ids, m.ActiveName) && len(m.Standbys) == 2
		})
		active := m.ActiveName
		var standbys []string
		for _, id := range ids {
			if id != active {
				standbys = append(standbys, id)
			}
		}
		stalled, waiting := standbys[0], standbys[1]
		pods := podUIDs(t, ns, ids)
		// A short progress deadline on the standbys (no template change,
		// not held), then one change of all three that no node can run.
		for _, id := range standbys {
			if out, err := env.kubectl(t, nil, "patch", "deployment", "-n", ns, contract.DeploymentName(id), "--type=merge",
				"-p", `{"spec":{"progressDeadlineSeconds":15}}`); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		}
		start := time.Now()
		nowhere := `{"spec":{"template":{"spec":{"nodeSelector":{"mgr.ceph.rook.io/e2e-node":"nowhere"}}}}}`
		for _, id := range ids {
			if out, err := env.kubectl(t, nil, "patch", "deployment", "-n", ns, contract.DeploymentName(id), "--type=merge", "-p", nowhere); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		}
		// The first standby rolls and stalls; the other standby and the
		// active stay held, on their pods.
		var st mgrstatus.Status
		err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			d := &appsv1.Deployment{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: contract.DeploymentName(active)}, d); err != nil {
				return false, nil
			}
			st, _ = mgrstatus.Of(d)
			return strings.HasPrefix(st.Rollout, "stalled: ") && strings.Contains(st.Rollout, "mgr "+stalled), nil
		})
		if err != nil {
			t.Fatalf("the active mgr %s's status never said the rollout stalled on mgr %s: %+v", active, stalled, st)
		}
		t.Logf("mgr %s (active)'s status: %q", active, st.Rollout)
		if notes := eventsOf(t, ns, contract.DeploymentName(active), start); !slices.ContainsFunc(notes, func(n string) bool {
			return strings.HasPrefix(n, bootstrap.ReasonRolloutStalled+":") && strings.Contains(n, "mgr "+stalled)
		}) {
			t.Errorf("no %s Event naming mgr %s on mgr %s: %v", bootstrap.ReasonRolloutStalled, stalled, active, notes)
		}
		for _, id := range []string{active, waiting} {
			d := deployment(t, ns, contract.DeploymentName(id))
			if !d.Spec.Paused || d.Annotations[contract.AnnotationRolloutHold] == "" {
				t.Errorf("mgr %s not held while mgr %s's rollout is stalled: paused %t, annotations %v", id, stalled, d.Spec.Paused, d.Annotations)
			}
			if p := mgrPod(t, ns, id); p.UID != pods[id] {
				t.Errorf("mgr %s's pod was replaced (%s) while mgr %s's rollout is stalled", id, p.Name, stalled)
			}
		}
		if m, _ := waitMgrMap(t, ns, "a mgr active", func(m mgrMap) bool { return m.Available }); m.ActiveName != active {
			t.Errorf("mgr %s is active; the stalled rollout failed %s over", m.ActiveName, active)
		}

		// Taken back: the held mgrs' templates are their pods' again
		// (released with no restart), the stalled one rolls back; no
		// failover.
		stop := watchMgrStat(t, ns)
		back := `{"spec":{"template":{"spec":{"nodeSelector":null}}}}`
		for _, id := range ids {
			if out, err := env.kubectl(t, nil, "patch", "deployment", "-n", ns, contract.DeploymentName(id), "--type=merge", "-p", back); err != nil {
				stop()
				t.Fatalf("%v\n%s", err, out)
			}
		}
		err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			for _, id := range ids {
				d := &appsv1.Deployment{}
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: contract.DeploymentName(id)}, d); err != nil ||
					d.Spec.Paused || d.Status.ObservedGeneration < d.Generation || d.Status.ReadyReplicas != 1 || d.Status.Replicas != 1 {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			stop()
			t.Fatal("the mgrs never all ran again after the change was taken back")
		}
		waitMgrMap(t, ns, fmt.Sprintf("mgr %s active with %v standing by", active, standbys), func(m mgrMap) bool {
			return m.Available && m.ActiveName == active && m.standby(stalled) && m.standby(waiting)
		})
		a := availabilityOf(stop())
		if len(a.changes) != 0 {
			t.Errorf("active mgr changes %v while the stalled change was taken back; want none", a.changes)
		}
		for _, id := range []string{active, waiting} {
			if p := mgrPod(t, ns, id); p.UID != pods[id] {
				t.Errorf("mgr %s's pod was replaced (%s) by a change taken back", id, p.Name)
			}
		}
	})
}

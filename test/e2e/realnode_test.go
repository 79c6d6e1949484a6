// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build node

package e2e

// What only real pods can show (make e2e-node: a real kubelet on this
// machine; it builds with -tags=node): the mgr containers' own probes, a mgr
// pod deleted, the webhook's pods evicted and rolled under load, the
// controller's leader killed mid-bootstrap.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
)

const systemNamespace = "mgr-webhook-system"

// mgrPod is the one live pod of mgr id in ns.
func mgrPod(t *testing.T, ns, id string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := env.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{contract.LabelMgrID: id}); err != nil {
			return false, nil
		}
		pod = nil
		for i := range pods.Items {
			if pods.Items[i].DeletionTimestamp == nil {
				if pod != nil {
					return false, nil // a rollout in progress: wait for one
				}
				pod = &pods.Items[i]
			}
		}
		return pod != nil, nil
	})
	if err != nil {
		t.Fatalf("no single live pod of mgr %s in %s", id, ns)
	}
	return pod
}

// createMgr applies the minimal mgr id in ns and deletes it (waiting for
// its finalizer) when t ends; a failing t prints what the mgr says.
func createMgr(t *testing.T, ns, id string) {
	t.Helper()
	explainOnFailure(t, ns, "rook-ceph-mgr-"+id)
	apply(t, env.manifest(t, ns, id, nil))
	t.Cleanup(func() {
		if out, err := env.kubectl(t, nil, "delete", "deployment", "-n", ns, "rook-ceph-mgr-"+id, "--wait=true", "--timeout=3m"); err != nil {
			t.Errorf("deleting mgr %s: %v\n%s", id, err, out)
		}
	})
}

// activeWithStandby brings ns to mgr active serving, the Services behind
// it, and standby standing by, and returns that mgr map.
func activeWithStandby(t *testing.T, ns, active, standby string) mgrMap {
	t.Helper()
	seen := makeActive(t, ns, active, standby)
	waitActive(t, ns, active, seen, 15*time.Second)
	m, _ := waitMgrMap(t, ns, fmt.Sprintf("mgr %s active with %s standing by", active, standby), func(m mgrMap) bool {
		return m.Available && m.ActiveName == active && m.standby(standby)
	})
	return m
}

// rejoined waits until pod, a mgr's replacement, is Ready and its daemon
// stands by in ns's mgr map with active still the active mgr.
func rejoined(t *testing.T, ns string, pod *corev1.Pod, active string) {
	t.Helper()
	id := pod.Labels[contract.LabelMgrID]
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod) == nil && podReady(pod), nil
	})
	if err != nil {
		t.Fatalf("mgr %s's new pod %s never Ready", id, pod.Name)
	}
	waitMgrMap(t, ns, fmt.Sprintf("mgr %s active with %s's new daemon standing by", active, id), func(m mgrMap) bool {
		return m.Available && m.ActiveName == active && m.standby(id)
	})
}

// TestRealMgrPods: mgrs c and d of the disposable Ceph namespace (no other
// mgr there, so which one is active is theirs alone) as real ceph-mgr
// containers: their liveness probe (the admin socket) passes, and deleting
// the active mgr's pod makes another daemon active, the Services follow it,
// and the ReplicaSet's new pod serves again.
func TestRealMgrPods(t *testing.T) {
	ctx := t.Context()
	ns := env.Teardown
	for _, id := range []string{"c", "d"} {
		createMgr(t, ns, id)
	}
	for _, id := range []string{"c", "d"} {
		waitReady(t, ns, "rook-ceph-mgr-"+id)
	}

	t.Run("liveness probes pass", func(t *testing.T) {
		for _, id := range []string{"c", "d"} {
			pod := mgrPod(t, ns, id)
			probe := pod.Spec.Containers[0].LivenessProbe
			if probe == nil || probe.Exec == nil {
				t.Fatalf("mgr %s's container has no exec liveness probe: %+v", id, probe)
			}
			// The kubelet restarts the container after failureThreshold
			// failed probes, the first initialDelaySeconds after it started:
			// past that window, no restart and no Unhealthy event means the
			// probe passed each time it ran.
			window := time.Duration(probe.InitialDelaySeconds+probe.PeriodSeconds*(probe.FailureThreshold+1)) * time.Second
			var started time.Time
			err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil || len(pod.Status.ContainerStatuses) == 0 {
					return false, nil
				}
				cs := pod.Status.ContainerStatuses[0]
				if cs.State.Running == nil {
					return false, nil
				}
				started = cs.State.Running.StartedAt.Time
				return time.Since(started) > window, nil
			})
			if err != nil {
				t.Fatalf("mgr %s's container not running for %s: %+v", id, window, pod.Status.ContainerStatuses)
			}
			if n := pod.Status.ContainerStatuses[0].RestartCount; n != 0 || !podReady(pod) {
				t.Errorf("mgr %s's pod after %s: %d restarts, Ready %t", id, window, n, podReady(pod))
			}
			events := &corev1.EventList{}
			if err := env.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			for _, e := range events.Items {
				if e.InvolvedObject.Name == pod.Name && e.Reason == "Unhealthy" {
					t.Errorf("mgr %s's pod: %s: %s", id, e.Reason, e.Message)
				}
			}
			t.Logf("mgr %s: container running %s with its liveness probe (%s) passing, pod IP %s", id,
				time.Since(started).Round(time.Second), strings.Join(probe.Exec.Command, " "), pod.Status.PodIP)
		}
	})

	t.Run("deleting the active mgr's pod", func(t *testing.T) {
		before := activeWithStandby(t, ns, "c", "d")
		old := mgrPod(t, ns, "c")
		if err := env.Client.Delete(ctx, old); err != nil {
			t.Fatal(err)
		}
		// Ceph replaces the active daemon: d, or c's new pod if it comes
		// back before c's beacons lapse (Ceph's choice; seen both ways).
		after, changed := waitMgrMap(t, ns, "another mgr daemon active", func(m mgrMap) bool {
			return m.Epoch > before.Epoch && m.Available && m.ActiveGID != before.ActiveGID
		})
		took, _ := waitActive(t, ns, after.ActiveName, changed, 15*time.Second)
		t.Logf("pod %s deleted: mgr %s active (gid %d, was %d), labelled so and alone behind both Services %s after the mgr map said so",
			old.Name, after.ActiveName, after.ActiveGID, before.ActiveGID, took.Round(100*time.Millisecond))
		// The ReplicaSet made c a new pod, which serves in the mgr map.
		back := mgrPod(t, ns, "c")
		if back.UID == old.UID {
			t.Fatalf("mgr c's pod is still %s", old.Name)
		}
		err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			return env.Client.Get(ctx, client.ObjectKeyFromObject(back), back) == nil && podReady(back), nil
		})
		if err != nil {
			t.Fatalf("mgr c's new pod %s never Ready", back.Name)
		}
		final, _ := waitMgrMap(t, ns, "mgrs c and d, one active and the other standing by", func(m mgrMap) bool {
			return m.Available && (m.ActiveName == "c" && m.standby("d") || m.ActiveName == "d" && m.standby("c"))
		})
		waitActive(t, ns, final.ActiveName, time.Now(), 15*time.Second)
		body, err := env.Metrics(ctx, ns, 0)
		if err != nil || !strings.Contains(body, "ceph_health_status") {
			t.Errorf("metrics through the Service's cluster IP after the failover: %v: %.200s", err, body)
		}
	})
}

// admissionLoad sends mgr creates (server-side dry run: both webhooks answer,
// nothing is stored) from 4 workers until stop, and counts answers and
// failures; a denial or an error is a failure.
type admissionLoad struct {
	sent, failed atomic.Int64
	mu           sync.Mutex
	errs         []string
	// failures are when each failed admission ended, and its error.
	failures []admissionFailure
	stop     context.CancelFunc
	done     sync.WaitGroup
}

type admissionFailure struct {
	at  time.Time
	err string
}

func startAdmissionLoad(t *testing.T, ns string) *admissionLoad {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := yaml.Unmarshal(env.manifest(t, ns, "load", nil), d); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &admissionLoad{stop: cancel}
	// A check that gives up early stops the workers too.
	t.Cleanup(func() { cancel(); l.done.Wait() })
	for w := 0; w < 4; w++ {
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			for ctx.Err() == nil {
				obj := d.DeepCopy()
				err := env.Client.Create(context.Background(), obj, client.DryRunAll)
				l.sent.Add(1)
				if err != nil {
					l.failed.Add(1)
					l.mu.Lock()
					if len(l.errs) < 5 {
						l.errs = append(l.errs, err.Error())
					}
					l.failures = append(l.failures, admissionFailure{at: time.Now(), err: err.Error()})
					l.mu.Unlock()
				}
			}
		}()
	}
	return l
}

// end stops the load and fails t if any admission failed.
func (l *admissionLoad) end(t *testing.T, what string) {
	t.Helper()
	l.stop()
	l.done.Wait()
	t.Logf("%s: %d admissions, %d failed", what, l.sent.Load(), l.failed.Load())
	if l.failed.Load() != 0 || l.sent.Load() == 0 {
		t.Errorf("%s: %d of %d admissions failed: %v", what, l.failed.Load(), l.sent.Load(), l.errs)
	}
}

// webhookAvailable waits until the webhook Deployment's rollout is complete:
// every replica updated, Ready and the only ones.
func webhookAvailable(t *testing.T) {
	t.Helper()
	out, err := env.kubectl(t, nil, "-n", systemNamespace, "rollout", "status", "deployment/mgr-webhook", "--timeout=5m")
	if err != nil {
		t.Fatalf("rollout of mgr-webhook: %v\n%s", err, out)
	}
}

func webhookPods(t *testing.T) []corev1.Pod {
	t.Helper()
	pods := &corev1.PodList{}
	if err := env.Client.List(context.Background(), pods, client.InNamespace(systemNamespace), client.MatchingLabels{"app.kubernetes.io/name": "mgr-webhook"}); err != nil {
		t.Fatal(err)
	}
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live
}

// TestWebhookUnderLoad: with failurePolicy Fail every mgr write depends on
// the webhook, so losing a replica must cost no admission: one evicted (as a
// drain does, through its PodDisruptionBudget) and a rolling update, each
// under a steady stream of mgr creates.
func TestWebhookUnderLoad(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespaces[1]
	webhookAvailable(t)

	t.Run("a replica evicted", func(t *testing.T) {
		pods := webhookPods(t)
		if len(pods) != 2 {
			t.Fatalf("%d webhook pods; the release runs 2", len(pods))
		}
		load := startAdmissionLoad(t, ns)
		waitSent(t, load, 50)
		victim := &pods[0]
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: systemNamespace}}
		if err := env.Client.SubResource("eviction").Create(ctx, victim, ev); err != nil {
			load.end(t, "eviction")
			t.Fatalf("evicting %s (the PDB allows one of two): %v", victim.Name, err)
		}
		// Load goes on until the victim is gone and a new replica serves.
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			p := &corev1.Pod{}
			return client.IgnoreNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(victim), p)) == nil && p.UID != victim.UID, nil
		})
		if err != nil {
			t.Errorf("evicted pod %s never went away", victim.Name)
		}
		webhookAvailable(t)
		waitSent(t, load, load.sent.Load()+50)
		load.end(t, "one of two webhook replicas evicted")
	})

	t.Run("a rolling update", func(t *testing.T) {
		load := startAdmissionLoad(t, ns)
		waitSent(t, load, 50)
		if out, err := env.kubectl(t, nil, "-n", systemNamespace, "rollout", "restart", "deployment/mgr-webhook"); err != nil {
			load.end(t, "rolling update")
			t.Fatalf("%v\n%s", err, out)
		}
		webhookAvailable(t)
		waitSent(t, load, load.sent.Load()+50)
		load.end(t, "a rolling update of the webhook Deployment")
	})
}

// waitSent waits until the load has sent n admissions.
func waitSent(t *testing.T, l *admissionLoad, n int64) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return l.sent.Load() >= n, nil
	})
	if err != nil {
		t.Fatalf("the load sent %d admissions, not %d", l.sent.Load(), n)
	}
}

// TestControllerKilledMidBootstrap: the controller's leader is killed (no
// grace) while a mgr's bootstrap is under way; the other replica takes the
// lease and finishes it: one key in Ceph, the one the keyring Secret holds.
func TestControllerKilledMidBootstrap(t *testing.T) {
	ctx := context.Background()
	ns, id := env.Namespaces[1], "e"
	name := "rook-ceph-mgr-" + id
	explainOnFailure(t, ns, name)
	apply(t, env.manifest(t, ns, id, nil))
	t.Cleanup(func() {
		if out, err := env.kubectl(t, nil, "delete", "deployment", "-n", ns, name, "--wait=true", "--timeout=3m"); err != nil {
			t.Errorf("deleting mgr %s: %v\n%s", id, err, out)
		}
	})
	// Mid-bootstrap: the keyring is made, the pod not yet Ready (its init
	// containers and the mgr's start take seconds).
	var st mgrstatus.Status
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return false, nil
		}
		var err error
		st, err = mgrstatus.Of(d)
		return err == nil && st.Phase != "" && st.Phase != mgrstatus.PhasePending, nil
	})
	if err != nil {
		t.Fatalf("the bootstrap of %s never started: %+v", name, st)
	}
	if st.Phase == mgrstatus.PhaseReady {
		t.Fatalf("the bootstrap of %s was done before it could be interrupted (%+v)", name, st)
	}
	lease := &coordinationv1.Lease{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: "mgr-bootstrap.mgr.ceph.rook.io"}, lease); err != nil || lease.Spec.HolderIdentity == nil {
		t.Fatalf("the controller's lease: %v %+v", err, lease.Spec)
	}
	leader := strings.SplitN(*lease.Spec.HolderIdentity, "_", 2)[0]
	if out, err := env.kubectl(t, nil, "-n", systemNamespace, "delete", "pod", leader, "--grace-period=0", "--force"); err != nil {
		t.Fatalf("killing the leader %s: %v\n%s", leader, err, out)
	}
	t.Logf("controller leader %s killed with %s in phase %s", leader, name, st.Phase)
	waitReady(t, ns, name)
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: "mgr-bootstrap.mgr.ceph.rook.io"}, lease); err != nil || lease.Spec.HolderIdentity == nil ||
		strings.HasPrefix(*lease.Spec.HolderIdentity, leader+"_") {
		t.Errorf("the lease after the leader was killed: %v %+v", err, lease.Spec.HolderIdentity)
	}
	keyringHolds(t, ns, id, cephKey(t, ns, "mgr."+id))
	t.Logf("%s bootstrapped by the new leader %s", name, *lease.Spec.HolderIdentity)
	out, err := env.kubectl(t, nil, "-n", systemNamespace, "rollout", "status", "deployment/mgr-bootstrap", "--timeout=5m")
	if err != nil {
		t.Errorf("the controller's Deployment after its leader was killed: %v\n%s", err, out)
	}
}

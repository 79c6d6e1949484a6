// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
)

// TestCephMonOutage: a mgr created while its cluster's only mon is down gets
// status CephUnavailable and a Warning Event; the controller retries with a
// bounded backoff (its ceph calls are counted: no hot loop); its probe closes
// the breaker within --ceph-retry-max of the mon's return, and the reconcile
// that follows bootstraps the mgr. CEPH_OUTAGE sets the outage (20s here;
// make chaos runs 60s).
func TestCephMonOutage(t *testing.T) {
	outage := 20 * time.Second
	if v := os.Getenv("CEPH_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("CEPH_OUTAGE=%q: %v", v, err)
		}
		outage = d
	}
	ctx := t.Context()
	// A cluster of its own, so that the other tests' Ceph stays up.
	const ns = nsOutage
	c := clusterOf(t, ns, cephtest.Options{})

	c.StopMon()
	// The reconciles' and probes' calls: the CephRelease keeper reads the
	// other, healthy clusters meanwhile, on its own interval.
	calls := func() float64 { return reconcileCalls(t) }
	before := calls()
	down := time.Now()
	// The one module chosen is always on from Octopus (15) on: no enable,
	// so Ready follows the mon's return, not a mgr restart.
	d := mgrDeployment(t, ns, "a", 1, map[string]string{contract.AnnotationModules: "orchestrator_cli"})
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, ns, d.Name, mgrstatus.PhaseCephUnavailable, outage)
	waitEvent(t, ns, d.Name, bootstrap.ReasonCephUnavailable, outage)
	time.Sleep(time.Until(down.Add(outage)))
	during := calls() - before

	unreachable := metric(t, "mgr_bootstrap_clusters_unreachable", nil)
	if err := c.StartMon(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	// The mon forms its quorum of one on its own clock; the controller's
	// starts when it answers.
	eventually(t, 40*time.Second, "the mon answering again", func(ctx context.Context) (bool, error) {
		_, err := c.Ceph(ctx, "mon", "stat")
		return err == nil, err
	})
	answers := time.Now()
	// The controller's retry clock: back at Ceph (the phase leaves
	// CephUnavailable: the key is made) within --ceph-retry-max of the
	// cluster answering, plus one reconcile: the role watcher's probe, at
	// most that far apart, closes the breaker and every mgr of the cluster
	// is retried at once. Ready follows once the mgr daemon, which
	// reconnects to the mon on its own clock, is available again for the
	// module step.
	var reached, afterClosed time.Duration
	var closed time.Time
	eventually(t, 40*time.Second, "the controller back at Ceph", func(context.Context) (bool, error) {
		if closed.IsZero() && metric(t, "mgr_bootstrap_clusters_unreachable", nil) < unreachable {
			closed = time.Now()
		}
		if p := status(t, ns, d.Name).Phase; p != mgrstatus.PhaseCephUnavailable && p != "" {
			reached = max(time.Since(answers), 0)
			if !closed.IsZero() {
				afterClosed = time.Since(closed)
			}
			return true, nil
		}
		return false, nil
	})
	waitPhase(t, ns, d.Name, mgrstatus.PhaseReady, 40*time.Second)
	recovered := time.Since(back)
	key, err := c.GetKey(ctx, "mgr.a")
	if err != nil || key == "" {
		t.Errorf("mgr.a has no key after the outage: %v", err)
	}
	t.Logf("mon down %s: %.0f ceph calls while down (%.1f per minute); the mon answered %s after its start, the controller back at Ceph %s later (%s after the breaker closed), Ready %s after the start",
		outage, during, during/outage.Minutes(), answers.Sub(back).Round(100*time.Millisecond), reached.Round(100*time.Millisecond), afterClosed.Round(100*time.Millisecond), recovered.Round(100*time.Millisecond))
	// From 1 s doubling to 10 s, plus the 2 s connect timeout of each call:
	// at most one call per 3 s on average, far from a hot loop.
	if max := outage.Seconds()/3 + 2; during > max {
		t.Errorf("%.0f ceph calls in a %s outage; want at most %.0f", during, outage, max)
	}
	// The probe, on the cluster's clock (at most --ceph-retry-max apart,
	// plus its own --mgr-stat-timeout), closes the breaker: the retry clock.
	// Then every mgr of the cluster is retried at once: one reconcile, whose
	// ceph CLI calls run to the status write (1.6-3 s quiet; 5-11 s on a
	// loaded 2-core CI machine), not the workqueue's backoff (minutes).
	if closed.IsZero() {
		t.Fatalf("the breaker never closed (mgr_bootstrap_clusters_unreachable stayed at %.0f)", unreachable)
	}
	if bound, took := bootstrap.DefaultOptions().CephRetryMax+3*time.Second, closed.Sub(answers); took > bound {
		t.Errorf("the breaker closed %s after the mon answered again; want within %s (--ceph-retry-max and the probe's timeout)", took, bound)
	}
	if bound := 30 * time.Second; afterClosed > bound {
		t.Errorf("back at Ceph %s after the breaker closed; want within %s (one reconcile, not the workqueue's backoff)", afterClosed, bound)
	}

	// A key the controller made, and the cluster gone at deletion: the
	// deletion waits out --finalizer-timeout, then proceeds and says what to
	// run by hand.
	if st := status(t, ns, d.Name); !st.KeyOwned {
		t.Fatalf("status does not record mgr.a's key as the controller's (adopted): %+v", st)
	}
	c.StopMon()
	start := time.Now()
	if err := k8s.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	eventually(t, finalizerTimeout+60*time.Second, "Deployment released", func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(get(ctx, ns, d.Name, &appsv1.Deployment{})), nil
	})
	if waited := time.Since(start); waited < finalizerTimeout-time.Second {
		t.Errorf("released after %s, before the finalizer timeout %s", waited, finalizerTimeout)
	}
	if note := eventReasons(t, ns, d.Name)[bootstrap.ReasonKeyRemovalAbandoned]; !strings.Contains(note, "ceph auth rm mgr.a") {
		t.Errorf("no %s Event telling the user what to do: %q", bootstrap.ReasonKeyRemovalAbandoned, note)
	}
}

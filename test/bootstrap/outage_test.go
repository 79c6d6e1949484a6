// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/cephtest"
	"github.com/rook-mgr/mgr-webhook/internal/testenv"
)

// TestCephMonOutage: a mgr created while its cluster's only mon is down gets
// status CephUnavailable and a Warning Event; the controller retries with a
// bounded backoff (its ceph calls are counted: no hot loop) and bootstraps the
// mgr within 15 s of the mon's return. CEPH_OUTAGE sets the outage (20s here;
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
	ctx := context.Background()
	// A cluster of its own, so that the other tests' Ceph stays up.
	c, err := cephtest.Start(ctx, cephtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	const ns = "ceph-outage"
	cephs[ns] = c
	defer delete(cephs, ns)
	if err := (testenv.CephCluster{Namespace: ns, FSID: c.FSID, MonHost: c.MonHost, Members: "a", AdminKeyring: c.AdminKeyring}).Create(ctx, k8s); err != nil {
		t.Fatal(err)
	}

	c.StopMon()
	calls := func() float64 { return metric(t, "mgr_bootstrap_ceph_calls_total", nil) }
	before := calls()
	down := time.Now()
	d := mgrDeployment(t, ns, "a", 1, map[string]string{contract.AnnotationModules: ""})
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, ns, d.Name, bootstrap.PhaseCephUnavailable, outage)
	waitEvent(t, ns, d.Name, bootstrap.ReasonCephUnavailable, outage)
	time.Sleep(time.Until(down.Add(outage)))
	during := calls() - before

	if err := c.StartMon(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	waitPhase(t, ns, d.Name, bootstrap.PhaseReady, 40*time.Second)
	recovered := time.Since(back)
	key, err := c.GetKey(ctx, "mgr.a")
	if err != nil || key == "" {
		t.Errorf("mgr.a has no key after the outage: %v", err)
	}
	t.Logf("mon down %s: %.0f ceph calls while down (%.1f per minute); Ready %s after the mon returned",
		outage, during, during/outage.Minutes(), recovered.Round(100*time.Millisecond))
	// From 1 s doubling to 10 s, plus the 2 s connect timeout of each call:
	// at most one call per 3 s on average, far from a hot loop.
	if max := outage.Seconds()/3 + 2; during > max {
		t.Errorf("%.0f ceph calls in a %s outage; want at most %.0f", during, outage, max)
	}
	if recovered > 15*time.Second {
		t.Errorf("Ready %s after the mon returned; want within 15s", recovered)
	}
}

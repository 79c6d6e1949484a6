// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/bootstrap/recovery"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
)

// TestFailedModuleFailover: a module the controller turned on fails on the
// active mgr for real (its port is taken by a listener before it starts:
// Ceph raises MGR_MODULE_ERROR and leaves it failed). The CephRelease names
// the module; the controller (--module-failover-interval set) fails the mgr over to the standby once, with a
// Warning Event naming the module and Ceph's error; the standby serves the
// module and the health check clears. When the module fails again on the
// next active mgr within the budget (--module-failover-interval), the mgr is
// left alone and an Event says why: no loop.
func TestFailedModuleFailover(t *testing.T) {
	ctx := t.Context()
	const ns = nsRecovery
	c := clusterOf(t, ns, cephtest.Options{MgrIDs: []string{"a", "b"}})
	defer func() {
		if !t.Failed() {
			return
		}
		cr := &v1alpha1.CephRelease{}
		err := k8s.Get(context.Background(), client.ObjectKey{Name: ns}, cr)
		t.Logf("CephRelease: %v %+v", err, cr.Status)
		evs := &eventsv1.EventList{}
		if err := k8s.List(context.Background(), evs, client.InNamespace(ns)); err == nil {
			for _, e := range evs.Items {
				t.Logf("Event %s %s %s: %s", e.EventTime.Format(time.RFC3339Nano), e.Regarding.Name, e.Reason, e.Note)
			}
		}
		for _, args := range [][]string{{"mgr", "dump"}, {"config-key", "get", contract.ModuleFailoverKey}, {"health", "detail"}} {
			out, err := c.Ceph(context.Background(), args...)
			t.Logf("ceph %s: %v\n%.3000s", strings.Join(args, " "), err, out)
		}
	}()
	active := func(ctx context.Context) (string, error) {
		out, err := c.Ceph(ctx, "mgr", "stat")
		if err != nil {
			return "", err
		}
		var st struct {
			Name string `json:"active_name"`
		}
		return st.Name, json.Unmarshal(out, &st)
	}
	if a, err := active(ctx); err != nil || a != "a" {
		t.Fatalf("the harness's first mgr is not the active one: %q, %v", a, err)
	}
	// mgr a's prometheus port is taken before the controller turns the
	// module on: a's prometheus fails to serve; b's port is free.
	taken, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", c.MgrPorts["a"][0]))
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()

	failovers := func() float64 {
		return metric(t, "mgr_bootstrap_ceph_calls_total", map[string]string{"command": "mgr fail"})
	}
	before := failovers()
	d := mgrDeployment(t, ns, "a", 1, map[string]string{contract.AnnotationModules: "prometheus"})
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Gone while its cluster still answers: the key goes with it.
		_ = k8s.Delete(context.Background(), d)
		eventually(t, time.Minute, "mgr a's Deployment gone", func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(get(ctx, ns, d.Name, d)), nil
		})
	}()

	if rel := cephRelease(t); rel.Major >= 20 {
		// Tentacle's prometheus does not fail on a taken port (seen on
		// 20.2.4: HEALTH_OK minutes later), so nothing here fails: what is
		// proven on it is that the controller fails nothing over then.
		waitEvent(t, ns, d.Name, bootstrap.ReasonModulesEnabled, 2*time.Minute)
		time.Sleep(time.Minute)
		cr := &v1alpha1.CephRelease{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: ns}, cr); err != nil || len(cr.Status.FailedModules) != 0 {
			t.Errorf("Ceph %s: CephRelease %+v (%v); want no failed module (if prometheus now fails on a taken port, this test can prove the failover on this release too)", rel, cr.Status, err)
		}
		if n := failovers() - before; n != 0 {
			t.Errorf("Ceph %s: %v failovers without a failed module", rel, n)
		}
		if _, ok := eventReasons(t, ns, d.Name)[recovery.ReasonFailover]; ok {
			t.Errorf("Ceph %s: a ModuleFailover Event without a failed module", rel)
		}
		t.Logf("Ceph %s: prometheus did not fail with its port taken; no failover", rel)
		return
	}
	// The failure as the controller records it.
	eventually(t, 3*time.Minute, "CephRelease "+ns+" naming the failed prometheus", func(ctx context.Context) (bool, error) {
		cr := &v1alpha1.CephRelease{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: ns}, cr); err != nil {
			return false, err
		}
		for _, f := range cr.Status.FailedModules {
			if f.Name == "prometheus" && f.Error != "" {
				return true, nil
			}
		}
		return false, fmt.Errorf("failed modules %+v", cr.Status.FailedModules)
	})
	note := waitEvent(t, ns, d.Name, recovery.ReasonFailover, 2*time.Minute)
	if !strings.Contains(note, "mgr module prometheus (") || !strings.Contains(note, "on the active mgr a") {
		t.Errorf("failover Event %q does not name the module, its error and the mgr", note)
	}
	eventually(t, 2*time.Minute, "mgr b active, MGR_MODULE_ERROR cleared", func(ctx context.Context) (bool, error) {
		a, err := active(ctx)
		if err != nil || a != "b" {
			return false, err
		}
		out, err := c.Ceph(ctx, "health", "detail")
		return err == nil && !strings.Contains(string(out), "MGR_MODULE_ERROR"), fmt.Errorf("%s: %v", out, err)
	})
	if n := failovers() - before; n != 1 {
		t.Errorf("%v failovers (ceph mgr fail) for one failed module, want 1", n)
	}

	// Back to a, whose port is still taken, once a stands by again and the
	// controller has seen the cluster healthy: the module fails again, and
	// the budget holds the controller.
	eventually(t, time.Minute, "CephRelease "+ns+" without failed modules", func(ctx context.Context) (bool, error) {
		cr := &v1alpha1.CephRelease{}
		err := k8s.Get(ctx, client.ObjectKey{Name: ns}, cr)
		return err == nil && len(cr.Status.FailedModules) == 0, err
	})
	eventually(t, 2*time.Minute, "mgr a standing by", func(ctx context.Context) (bool, error) {
		out, err := c.Ceph(ctx, "mgr", "dump")
		if err != nil {
			return false, err
		}
		var m struct {
			Standbys []struct {
				Name string `json:"name"`
			} `json:"standbys"`
		}
		if err := json.Unmarshal(out, &m); err != nil {
			return false, err
		}
		return len(m.Standbys) == 1 && m.Standbys[0].Name == "a", fmt.Errorf("standbys %+v", m.Standbys)
	})
	if _, err := c.Ceph(ctx, "mgr", "fail", "b"); err != nil {
		t.Fatal(err)
	}
	// The only held Event (an Event of the same reason within minutes
	// would count as a series of the first, keeping its note).
	held := waitEvent(t, ns, d.Name, recovery.ReasonHeld, 2*time.Minute)
	if !strings.Contains(held, "mgr module prometheus (") || !strings.Contains(held, "on the active mgr a") || !strings.Contains(held, "at most once per "+moduleFailoverInterval.String()) {
		t.Errorf("held Event %q does not name the module, the mgr and the budget", held)
	}
	// Several of the keeper's reads later, no second failover.
	time.Sleep(4 * releaseInterval)
	if a, err := active(ctx); err != nil || a != "a" {
		t.Errorf("active mgr %q (%v) after the held failure, want a left alone", a, err)
	}
	if n := failovers() - before; n != 1 {
		t.Errorf("%v failovers within the budget, want 1", n)
	}
}

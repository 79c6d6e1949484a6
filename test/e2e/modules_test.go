// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// annotate sets (or, with "-", removes) the modules annotation of mgr id.
func annotate(t *testing.T, ns, id, modules string) {
	t.Helper()
	d := deployment(t, ns, contract.DeploymentName(id))
	patch := client.MergeFrom(d.DeepCopy())
	if modules == "-" {
		delete(d.Annotations, contract.AnnotationModules)
	} else {
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[contract.AnnotationModules] = modules
	}
	if err := env.Client.Patch(context.Background(), d, patch); err != nil {
		t.Fatal(err)
	}
}

// enabled are the modules `ceph mgr module ls` reports enabled in ns's cluster.
func enabled(t *testing.T, ns string) []string {
	t.Helper()
	out, err := env.Ceph(context.Background(), ns, "mgr", "module", "ls")
	if err != nil {
		t.Fatal(err)
	}
	var ls struct {
		Enabled []string `json:"enabled_modules"`
	}
	if err := json.Unmarshal(out, &ls); err != nil {
		t.Fatal(err)
	}
	return ls.Enabled
}

// cephCalls counts the controller's ceph calls of command (e.g. "mgr
// stat", "mgr module disable"), or -1 where its metrics cannot be read
// (another cluster).
func cephCalls(t *testing.T, command string) float64 {
	t.Helper()
	url, ok := env.MetricsURLs["mgr-bootstrap"]
	if !ok {
		return -1
	}
	v, err := testenv.ScrapeSum(url, "mgr_bootstrap_ceph_calls_total", map[string]string{"command": command})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// bothSettled waits until mgrs a and b have status phase and, when with is
// set, a status it accepts: an annotation changes no generation, so a
// phase alone may be the one from before the change.
func bothSettled(t *testing.T, ns string, phase mgrstatus.Phase, timeout time.Duration, with func(mgrstatus.Status) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, id := range []string{"a", "b"} {
			d := &appsv1.Deployment{}
			if env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: contract.DeploymentName(id)}, d) != nil {
				return false, nil
			}
			if st, _ := mgrstatus.Of(d); st.Phase != phase || st.ObservedGeneration != d.Generation || (with != nil && !with(st)) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("mgrs a and b not both %s within %s", phase, timeout)
	}
}

// clusterModules: the wanted modules are the cluster's. An annotation on mgr
// a changes the set for b too; dashboard, removed from the set, is disabled
// exactly once (not once per mgr, not on every reconcile); a second,
// different annotation on b is a conflict, reported on both and not fought
// over; with the annotations gone the defaults come back. Runs with a and b
// Ready in ns, and leaves them Ready on the defaults.
func clusterModules(t *testing.T, ns string) {
	disables, enables := cephCalls(t, "mgr module disable"), cephCalls(t, "mgr module enable")
	annotate(t, ns, "a", "orchestrator_cli,rook,prometheus")
	bothSettled(t, ns, mgrstatus.PhaseReady, 2*time.Minute, func(st mgrstatus.Status) bool { return !slices.Contains(st.Modules, "dashboard") })
	time.Sleep(6 * time.Second) // a resync or role pass meanwhile must not disable again
	if on := enabled(t, ns); slices.Contains(on, "dashboard") || !slices.Contains(on, "prometheus") {
		t.Errorf("enabled modules after removing dashboard from the cluster's set: %v", on)
	}
	if disables >= 0 {
		if n := cephCalls(t, "mgr module disable") - disables; n != 1 {
			t.Errorf("%.0f `mgr module disable` calls for one module removed from a cluster of two mgrs; want exactly 1", n)
		}
	}

	// A conflicting annotation: reported on both mgrs, nothing changed.
	before, beforeEnables := cephCalls(t, "mgr module disable"), cephCalls(t, "mgr module enable")
	annotate(t, ns, "b", "prometheus")
	bothSettled(t, ns, mgrstatus.PhaseError, time.Minute, nil)
	for _, id := range []string{"a", "b"} {
		evs := &eventsv1.EventList{}
		if err := env.Client.List(context.Background(), evs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range evs.Items {
			found = found || (e.Regarding.Name == contract.DeploymentName(id) && e.Reason == bootstrap.ReasonModulesConflict && e.Type == "Warning")
		}
		if !found {
			t.Errorf("no Warning %s Event on mgr %s", bootstrap.ReasonModulesConflict, id)
		}
	}
	if before >= 0 && (cephCalls(t, "mgr module disable") != before || cephCalls(t, "mgr module enable") != beforeEnables) {
		t.Error("modules were turned on or off while the annotations conflicted")
	}

	// Back to the defaults: dashboard on again, once.
	annotate(t, ns, "b", "-")
	annotate(t, ns, "a", "-")
	bothSettled(t, ns, mgrstatus.PhaseReady, 3*time.Minute, func(st mgrstatus.Status) bool { return slices.Contains(st.Modules, "dashboard") })
	if on := enabled(t, ns); !slices.Contains(on, "dashboard") {
		t.Errorf("dashboard not enabled again with the defaults: %v", on)
	}
	if enables >= 0 {
		if n := cephCalls(t, "mgr module enable") - enables; n != 1 {
			t.Errorf("%.0f `mgr module enable` calls over the whole change; want exactly 1 (dashboard, back)", n)
		}
	}
}

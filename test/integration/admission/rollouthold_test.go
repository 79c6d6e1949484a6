// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// TestRolloutHoldThroughAPIServer: what the API server stores when a mgr's
// pod template changes (docs/rollouts.md). With a standby in the cluster's
// CephRelease the change is stored held (paused, marked) for the
// controller's standby-first rollout, and a later write that keeps the
// template keeps the hold; resumed, it is not held again. A writer cannot
// mark a mgr held (the mark is the webhook's alone: the controller would
// fail the mgr over for it), and a mgr its writer pauses is not taken over.
// With no standby, a change is not held: nothing to fail over to.
func TestRolloutHoldThroughAPIServer(t *testing.T) {
	ctx := t.Context()
	const ns = "ceph-east"
	d, err := testenv.MinimalMgrObject(repoRoot, ns, "h")
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), d) })
	record := recordRelease(t, ns)
	standbys := func(n int32) {
		t.Helper()
		record(v1alpha1.CephReleaseStatus{RequireOSDRelease: "squid", MinMonRelease: "squid", MonReleases: []string{"19.2.3"}, Health: "HEALTH_OK", StandbyMgrs: n})
	}
	write := func(what string, edit func(d *appsv1.Deployment)) *appsv1.Deployment {
		t.Helper()
		cur := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), cur); err != nil {
			t.Fatal(err)
		}
		edit(cur)
		if err := k8s.Update(ctx, cur); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return cur
	}
	expect := func(what string, got *appsv1.Deployment, held, paused bool) {
		t.Helper()
		mark, marked := got.Annotations[contract.AnnotationRolloutHold]
		if (marked && mark == contract.RolloutHoldStandbysFirst) != held || marked && !held || got.Spec.Paused != paused {
			t.Errorf("%s: stored paused %t, hold mark %q (present %t); want held %t, paused %t", what, got.Spec.Paused, mark, marked, held, paused)
		}
	}
	restart := func(d *appsv1.Deployment) {
		if d.Spec.Template.Annotations == nil {
			d.Spec.Template.Annotations = map[string]string{}
		}
		d.Spec.Template.Annotations[contract.AnnotationRestartedAt] = time.Now().Format(time.RFC3339Nano)
	}

	standbys(1)
	expect("a template change with a standby", write("restart", restart), true, true)
	expect("a label change of a held mgr", write("label", func(d *appsv1.Deployment) { d.Labels["team"] = "storage" }), true, true)
	expect("resumed, mark dropped (the controller's release)", write("release", func(d *appsv1.Deployment) {
		d.Spec.Paused = false
		delete(d.Annotations, contract.AnnotationRolloutHold)
	}), false, false)
	expect("a writer's hold mark with no template change", write("forge", func(d *appsv1.Deployment) {
		d.Spec.Paused = true
		d.Annotations[contract.AnnotationRolloutHold] = contract.RolloutHoldStandbysFirst
	}), false, true)
	expect("a template change of a mgr its writer paused", write("restart paused", restart), false, true)
	write("resume", func(d *appsv1.Deployment) { d.Spec.Paused = false })

	standbys(0)
	expect("a template change with no standby", write("restart alone", restart), false, false)
}

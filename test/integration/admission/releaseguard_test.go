// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// TestReleaseGuardThroughAPIServer: with the cluster's CephRelease as the
// controller writes it, a change of a mgr's image is judged by Ceph's
// upgrade path: on a Pacific cluster Tentacle is refused naming both floors
// and how to raise them, Reef is admitted, a major downgrade is refused, a
// known-bad path is refused naming its issue, and a change on a cluster
// with no standby and not HEALTH_OK is admitted with both warnings.
func TestReleaseGuardThroughAPIServer(t *testing.T) {
	ctx := t.Context()
	const ns = "ceph-east"
	d, err := testenv.MinimalMgrObject(repoRoot, ns, "g")
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = "quay.io/ceph/ceph:v16.2.15"
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), d) })

	record := recordRelease(t, ns)
	state := func(osd, mon string, mons []string, health string, standbys int32) {
		t.Helper()
		record(v1alpha1.CephReleaseStatus{RequireOSDRelease: osd, MinMonRelease: mon, MonReleases: mons, MgrReleases: mons, Health: health, StandbyMgrs: standbys})
	}
	as, seen := api.WarnedClient(t, k8s.Scheme())
	setImage := func(tag string) error {
		cur := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), cur); err != nil {
			t.Fatal(err)
		}
		cur.Spec.Template.Spec.Containers[0].Image = "quay.io/ceph/ceph:" + tag
		return as.Update(ctx, cur)
	}
	refused := func(tag string, want ...string) {
		t.Helper()
		err := setImage(tag)
		if err == nil {
			t.Fatalf("%s admitted, want refused", tag)
		}
		for _, w := range append(want, "spec.template.spec.containers[0].image") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s refused without %q: %v", tag, w, err)
			}
		}
	}

	state("pacific", "pacific", []string{"16.2.15"}, "HEALTH_OK", 1)
	refused("v20.2.4", "require_osd_release", "ceph osd require-osd-release reef", "min_mon_release", "crosses 4 majors")
	if err := setImage("v18.2.7"); err != nil {
		t.Fatalf("Pacific to Reef on a Pacific cluster: %v", err)
	}
	if w := strings.Join(seen.Take(), "\n"); strings.Contains(w, "images.upgrade") {
		t.Errorf("a healthy upgrade warned: %s", w)
	}
	refused("v16.2.15", "goes back a major release")

	state("squid", "squid", []string{"19.2.6"}, "HEALTH_OK", 1)
	if err := setImage("v19.2.6"); err != nil {
		t.Fatalf("Reef to Squid on a Squid cluster: %v", err)
	}
	refused("v20.2.3", "ceph/ceph#71803", "upgrade to 20.2.4 or later instead")

	state("squid", "squid", []string{"19.2.6"}, "HEALTH_WARN", 0)
	if err := setImage("v19.2.7"); err != nil {
		t.Fatalf("a patch upgrade, no standby, HEALTH_WARN: refused (%v), want warned", err)
	}
	w := strings.Join(seen.Take(), "\n")
	for _, want := range []string{"no standby mgr", "the cluster is HEALTH_WARN", "policy rule images.upgradeReadiness: Warn"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q lack %q", w, want)
		}
	}
}

// recordRelease creates CephRelease ns, as the controller does, and returns
// how to record a read of the cluster in it: its status, read now, written
// and waited for until the webhook's cache holds it.
func recordRelease(t *testing.T, ns string) func(v1alpha1.CephReleaseStatus) {
	t.Helper()
	ctx := t.Context()
	release := &v1alpha1.CephRelease{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := k8s.Create(ctx, release); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), release) })
	return func(st v1alpha1.CephReleaseStatus) {
		t.Helper()
		st.ReadTime = metav1.NewTime(time.Now().Truncate(time.Second))
		release.Status = st
		if err := k8s.Status().Update(ctx, release); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			info, err := clusters.Lookup(ns)
			return err == nil && info.Upgrade != nil && info.Upgrade.RequireOSDRelease == st.RequireOSDRelease &&
				info.Upgrade.Health == st.Health && info.Upgrade.Standbys == int(st.StandbyMgrs), nil
		}); err != nil {
			t.Fatalf("the webhook's cache never saw CephRelease %s as %+v: %v", ns, st, err)
		}
	}
}

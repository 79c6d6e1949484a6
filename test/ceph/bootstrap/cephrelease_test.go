// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"context"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// releaseInterval is how often the controller under test reads each
// cluster into its CephRelease (the default is a minute). The refresh of an
// unchanged one stays the default (10 minutes), so that TestQuietAtRest
// sees no write of it: TestDue holds the refresh at its boundary.
const releaseInterval = 3 * time.Second

// moduleFailoverInterval is the controller's --module-failover-interval
// (off by default): TestFailedModuleFailover's budget, and longer than the
// rest of the suite, so that no mgr of another test is failed over twice.
const moduleFailoverInterval = 10 * time.Minute

// TestCephReleaseRecordsTheCluster: the controller keeps one CephRelease per
// cluster with mgrs, named by its namespace, with what Ceph says: a fresh
// cluster's own release as both floors, its mon's and mgr's release, its
// health and no standby. A namespace editor may not write one, and one of
// a namespace without mgrs goes within an interval.
func TestCephReleaseRecordsTheCluster(t *testing.T) {
	readyMgr(t, nsMain, "a", nil)
	rel := cephRelease(t)
	name := contract.ReleaseNames[rel.Major]
	cr := &v1alpha1.CephRelease{}
	eventually(t, 2*time.Minute, "CephRelease "+nsMain+" written", func(ctx context.Context) (bool, error) {
		err := k8s.Get(ctx, client.ObjectKey{Name: nsMain}, cr)
		return err == nil && cr.Status.RequireOSDRelease != "", err
	})
	st := cr.Status
	if st.RequireOSDRelease != name || st.MinMonRelease != name || !slices.Equal(st.MonReleases, []string{rel.String()}) ||
		!slices.Equal(st.MgrReleases, []string{rel.String()}) || st.StandbyMgrs != 0 ||
		!slices.Contains([]string{"HEALTH_OK", "HEALTH_WARN", "HEALTH_ERR"}, st.Health) {
		t.Errorf("CephRelease %s: %+v; want both floors %q, mon and mgr on %s, no standby, a health status", nsMain, st, name, rel)
	}
	// Unchanged, it is written again at least every refresh: its read time
	// is never older than that (and a pass).
	if age, most := time.Since(st.ReadTime.Time), bootstrap.DefaultOptions().ReleaseRefresh+2*releaseInterval; age > most {
		t.Errorf("CephRelease %s read %s ago, more than the refresh and a pass (%s)", nsMain, age.Round(time.Second), most)
	}

	// An editor of the namespace (ClusterRole edit, bound there) writes none.
	ctx := t.Context()
	editor := "cephrelease-editor"
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: nsMain, Name: editor},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: editor}}}
	if err := k8s.Create(ctx, rb); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), rb) })
	as, err := client.New(api.ConfigAs(editor), client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	forged := cr.DeepCopy()
	forged.Status.RequireOSDRelease = "umbrella"
	for what, err := range map[string]error{
		"update its status": as.Status().Update(ctx, forged),
		"delete it":         as.Delete(ctx, forged),
		"create another":    as.Create(ctx, &v1alpha1.CephRelease{ObjectMeta: metav1.ObjectMeta{Name: "ceph-forged"}}),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("a namespace editor may %s: %v", what, err)
		}
	}

	// One of a namespace without mgrs is the controller's to remove.
	stale := &v1alpha1.CephRelease{ObjectMeta: metav1.ObjectMeta{Name: "ceph-no-mgrs"}}
	if err := k8s.Create(ctx, stale); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "CephRelease ceph-no-mgrs removed", func(ctx context.Context) (bool, error) {
		err := k8s.Get(ctx, client.ObjectKey{Name: stale.Name}, &v1alpha1.CephRelease{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

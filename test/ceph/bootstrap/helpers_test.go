// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"context"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

// mgrDeployment is the shipped minimal example for mgr id in ns, completed as
// the webhook would, with the module ports of that namespace's Ceph cluster
// (set as user values, which completion keeps) so clusters share the host.
func mgrDeployment(t *testing.T, ns, id string, replicas int32, anns map[string]string) *appsv1.Deployment {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(root + "/manifests/examples/minimal-mgr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(data, d); err != nil {
		t.Fatal(err)
	}
	d.Namespace, d.Name, d.Labels[contract.LabelMgrID], d.Annotations = ns, "rook-ceph-mgr-"+id, id, anns
	d.Spec.Replicas = &replicas
	info := mutate.ClusterInfo{Namespace: ns, FSID: "00000000-0000-4000-8000-000000000000"}
	if c := cephs[ns]; c != nil {
		info.FSID = c.FSID
		d.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{
			{Name: contract.PortNameMetrics, ContainerPort: int32(c.PrometheusPort)},
			{Name: contract.PortNameDash, ContainerPort: int32(c.DashboardPort)},
		}
	}
	p := mutate.DefaultPolicy()
	res, errs := mutate.Complete(d, info, p)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return res.Deployment
}

// readyMgr returns the name of mgr id of ns once it is bootstrapped and Ready,
// creating it (one replica, annotations anns) when no earlier test did, so
// that no test depends on running after another.
func readyMgr(t *testing.T, ns, id string, anns map[string]string) string {
	t.Helper()
	name := contract.DeploymentName(id)
	d := &appsv1.Deployment{}
	switch err := get(context.Background(), ns, name, d); {
	case apierrors.IsNotFound(err):
		if err := k8s.Create(context.Background(), mgrDeployment(t, ns, id, 1, anns)); err != nil {
			t.Fatal(err)
		}
	case err != nil:
		t.Fatal(err)
	case d.Spec.Replicas != nil && *d.Spec.Replicas == 0:
		scale(t, ns, name, 1)
	}
	waitPhase(t, ns, name, mgrstatus.PhaseReady, 4*time.Minute)
	return name
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s (last error: %v)", what, timeout, last)
	}
}

func get(ctx context.Context, ns, name string, o client.Object) error {
	return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o)
}

func status(t *testing.T, ns, name string) mgrstatus.Status {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := get(context.Background(), ns, name, d); err != nil {
		t.Fatal(err)
	}
	s, err := mgrstatus.Of(d)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func waitPhase(t *testing.T, ns, name string, phase mgrstatus.Phase, timeout time.Duration) mgrstatus.Status {
	t.Helper()
	var s mgrstatus.Status
	eventually(t, timeout, "phase "+string(phase), func(context.Context) (bool, error) {
		s = status(t, ns, name)
		return s.Phase == phase, nil
	})
	return s
}

// eventReasons lists the reasons of the Events about a Deployment.
func eventReasons(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	notes, err := testenv.DeploymentEvents(context.Background(), k8s, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return notes
}

func waitEvent(t *testing.T, ns, name, reason string, timeout time.Duration) string {
	t.Helper()
	var note string
	eventually(t, timeout, "event "+reason, func(context.Context) (bool, error) {
		note = eventReasons(t, ns, name)[reason]
		return note != "", nil
	})
	return note
}

// metric sums a counter of the controller-runtime registry over the series
// whose labels match.
func metric(t *testing.T, name string, match map[string]string) float64 {
	t.Helper()
	sum, err := testenv.CounterSum(name, match)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// keeperReads are the commands of the CephRelease keeper (bootstrap/releases),
// which reads every cluster that answers on its own interval (health detail
// only while a module has failed): the tests that count the reconciles'
// calls leave them out.
var keeperReads = []string{"status", "osd dump", "versions", "health detail"}

// reconcileCalls is mgr_bootstrap_ceph_calls_total less the keeper's reads.
func reconcileCalls(t *testing.T) float64 {
	t.Helper()
	n := metric(t, "mgr_bootstrap_ceph_calls_total", nil)
	for _, c := range keeperReads {
		n -= metric(t, "mgr_bootstrap_ceph_calls_total", map[string]string{"command": c})
	}
	return n
}

func enabledModules(t *testing.T, c *cephtest.Cluster) map[string]bool {
	t.Helper()
	mods, err := c.EnabledModules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range mods {
		out[m] = true
	}
	return out
}

// cephRelease is the release of the ceph CLI in PATH: the release of the
// test clusters' daemons (make test puts another release's first).
func cephRelease(t *testing.T) ceph.Version {
	t.Helper()
	v, err := cephtest.Release()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// clusterOf starts a Ceph cluster of the test's own (the other tests' Ceph
// stays as it is) for namespace ns, with its cluster objects there; it stops
// with the test.
func clusterOf(t *testing.T, ns string, o cephtest.Options) *cephtest.Cluster {
	t.Helper()
	ctx := t.Context()
	c, err := cephtest.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	cephs[ns] = c
	t.Cleanup(func() { delete(cephs, ns) })
	if err := (testenv.CephCluster{Namespace: ns, FSID: c.FSID, MonHost: c.MonHost, Members: "a", AdminKeyring: c.AdminKeyring}).Create(ctx, k8s); err != nil {
		t.Fatal(err)
	}
	return c
}

// updateMgrPolicy changes MgrPolicy default (creating it), exempting ns:
// the shipped mgr-policy check judges the suite's mgrs, which no webhook
// completes here, only while a MgrPolicy exists. The controller writes the
// MgrPolicy's status: each change is retried on a conflict.
func updateMgrPolicy(t *testing.T, ns string, change func(*v1alpha1.PolicySpec)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mp := &v1alpha1.MgrPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
		err := k8s.Get(t.Context(), client.ObjectKeyFromObject(mp), mp)
		mp.Spec.Exemptions = []v1alpha1.Exemption{{Namespace: ns}}
		change(&mp.Spec)
		switch {
		case apierrors.IsNotFound(err):
			return k8s.Create(t.Context(), mp)
		case err != nil:
			return err
		}
		return k8s.Update(t.Context(), mp)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// removeMgrPolicy deletes MgrPolicy default: the built-in policy is in
// force again.
func removeMgrPolicy(t *testing.T) {
	err := k8s.Delete(context.Background(), &v1alpha1.MgrPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
	}
}

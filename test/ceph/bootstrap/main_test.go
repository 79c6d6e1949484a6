// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package bootstrap_test tests the bootstrap controller against real parts:
// etcd + kube-apiserver, kube-controller-manager, kube-scheduler and kwok (so
// mgr pods really become Ready and owned objects are garbage-collected), and
// two throwaway Ceph clusters (mon + mgr on loopback).
package bootstrap_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/policy"
)

var (
	k8s client.Client
	// api is the suite's API server (mgrctl runs against its kubeconfig).
	api *testenv.APIServer
	// controllerCache is the running controller's cache.
	controllerCache cache.Cache
	// cephs maps a namespace to its real Ceph cluster.
	cephs = map[string]*cephtest.Cluster{}
)

const (
	nsMain = "rook-ceph"
	nsEast = "ceph-east"
	// nsDown's cluster objects point at a mon that does not exist.
	nsDown = "ceph-down"
	// nsForeign is a second namespace of nsMain's Ceph cluster, where the
	// controller may not adopt keys it did not create (it may in nsMain and
	// nsEast, whose mgr daemons run with keys the harness made).
	nsForeign = "ceph-foreign"
	// nsOutage is TestCephMonOutage's cluster, whose mgr daemon runs with a
	// key the harness made.
	nsOutage = "ceph-outage"
	// nsAdminModules is TestModuleAnAdministratorTurnedOnStaysOn's cluster,
	// likewise.
	nsAdminModules = "ceph-admin-modules"
	// nsRecovery is TestFailedModuleFailover's cluster of two mgr daemons,
	// likewise.
	nsRecovery = "ceph-recovery"
	// nsOptions is TestModuleOptions's cluster, likewise.
	nsOptions = "ceph-options"
	// nsKeys is TestKeyRotation's cluster of two mgr daemons, likewise.
	nsKeys = "ceph-keys"
	// nsFar's mon_host names an address outside the controller's
	// --mon-networks (the harness allows loopback only).
	nsFar = "ceph-far"
	// farMon is that address: the cloud metadata service.
	farMon = "169.254.169.254"
	// finalizerTimeout is short so the lost-cluster deletion test is quick.
	finalizerTimeout = 8 * time.Second
)

func TestMain(m *testing.M) { testenv.Main(m, "bootstrap tests", run) }

func run(m *testing.M) (int, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The two Ceph clusters start while the control plane does.
	var wg sync.WaitGroup
	var cephErr error
	var mu sync.Mutex
	for _, ns := range []string{nsMain, nsEast} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := cephtest.Start(ctx, cephtest.Options{})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				cephErr = err
				return
			}
			cephs[ns] = c
		}()
	}
	defer func() {
		for _, c := range cephs {
			c.Stop()
		}
	}()

	root, err := testenv.RepoRoot()
	if err != nil {
		return 1, err
	}
	reports, err := testenv.OpenReportsCRDs()
	if err != nil {
		return 1, err
	}
	// A strict API server: setting blockOwnerDeletion needs update on the
	// owner's finalizers, which the shipped RBAC must grant.
	api, err = testenv.StartAPIServerWith(testenv.APIServerOptions{
		CRDs: []string{filepath.Join(root, "test", "crds"), filepath.Join(root, "manifests", "base", "policy", "generated", "mgr.ceph.rook.io_cephreleases.yaml"),
			filepath.Join(root, "manifests", "base", "policy", "generated", "mgr.ceph.rook.io_mgrpolicies.yaml"), reports},
		AdmissionPlugins: []string{"OwnerReferencesPermissionEnforcement"},
	})
	if err != nil {
		return 1, err
	}
	defer api.Stop()
	if err := v1alpha1.AddToScheme(api.Scheme); err != nil { // CephRelease
		return 1, err
	}
	scheme := api.Scheme
	k8s = api.Client
	w, err := testenv.StartWorkloads(ctx, api)
	if err != nil {
		return 1, err
	}
	defer w.Stop()
	wg.Wait()
	if cephErr != nil {
		return 1, cephErr
	}

	for ns, c := range cephs {
		cc := testenv.CephCluster{Namespace: ns, FSID: c.FSID, MonHost: c.MonHost, Members: "a", AdminKeyring: c.AdminKeyring}
		if err := cc.Create(ctx, k8s); err != nil {
			return 1, err
		}
	}
	foreign := testenv.CephCluster{Namespace: nsForeign, FSID: cephs[nsMain].FSID, MonHost: cephs[nsMain].MonHost, Members: "a", AdminKeyring: cephs[nsMain].AdminKeyring}
	if err := foreign.Create(ctx, k8s); err != nil {
		return 1, err
	}
	down := testenv.CephCluster{Namespace: nsDown, FSID: "00000000-0000-4000-8000-000000000000", MonHost: "v2:127.0.0.1:1", Members: "a",
		AdminKeyring: cephs[nsMain].AdminKeyring}
	if err := down.Create(ctx, k8s); err != nil {
		return 1, err
	}
	far := testenv.CephCluster{Namespace: nsFar, FSID: "00000000-0000-4000-8000-000000000001", MonHost: "[v2:" + farMon + ":3300,v1:" + farMon + ":6789]", Members: "a",
		AdminKeyring: cephs[nsMain].AdminKeyring}
	if err := far.Create(ctx, k8s); err != nil {
		return 1, err
	}

	// The controller runs as its ServiceAccount with the shipped RBAC.
	if _, err := testenv.ApplyRBAC(ctx, k8s, filepath.Join(root, "manifests", "base")); err != nil {
		return 1, err
	}
	mgr, err := ctrl.NewManager(api.ConfigAs(testenv.ServiceAccountUser("mgr-webhook-system", "mgr-bootstrap")), ctrl.Options{
		Scheme: scheme, Cache: bootstrap.CacheOptions(), Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return 1, err
	}
	opts := bootstrap.DefaultOptions()
	opts.FinalizerTimeout = finalizerTimeout
	opts.RetryInterval = time.Second
	opts.AdoptExistingKeys = []string{nsMain, nsEast, nsOutage, nsAdminModules, nsRecovery, nsOptions, nsKeys}
	opts.ReleaseInterval = releaseInterval
	opts.ModuleFailoverInterval = moduleFailoverInterval
	// MgrPolicy default is watched, as installed: TestModuleOptions changes
	// it. The flags above (modules, choices, adoption) stay in force over
	// it. The audit writes each namespace's Report (it makes no ceph call).
	opts.Policy, opts.PolicyName, opts.Pod, opts.AuditInterval = policy.NewStore(mutate.DefaultPolicy(), "built-in"), "default", "mgr-bootstrap-test", 2*time.Second
	// Every test cluster's mons are on loopback: every test runs with the
	// mon networks restricted, and TestMonHostOutsideTheMonNetworks sees one
	// outside refused.
	opts.MonNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	// The modules the tests' mgrs choose by annotation; "alerts" is left out
	// for TestModulesAnnotationSteersNoCephWrite.
	opts.ModuleChoices = append(slices.Clone(contract.DefaultModules), "influxdb2")
	python, err := ceph.PythonOf(testenv.ControllerCeph())
	if err != nil {
		return 1, err
	}
	runner := &ceph.Runner{Binary: testenv.ControllerCeph(), ConnectTimeout: 2 * time.Second, Timeout: 20 * time.Second,
		Monitor: &ceph.Monitor{Python: python, Timeout: 2 * time.Second}}
	written.Ceph = runner
	if err := bootstrap.Setup(mgr, opts, written, 4); err != nil {
		return 1, err
	}
	controllerCache = mgr.GetCache()
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "controller manager:", err)
		}
	}()
	return m.Run(), nil
}

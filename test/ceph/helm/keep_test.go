// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package helm

import (
	"context"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// TestHelmUninstallKeepsTheCRDs: `helm uninstall` (Helm's own action, on a
// real API server) leaves the CRDs, and with them a site's MgrPolicy, unless
// crds.keep=false; then the CRDs and the policies go. The pre-delete hook is
// left out here: it needs a node to run its Job (TestUninstallReleasesMgrs
// runs its step).
func TestHelmUninstallKeepsTheCRDs(t *testing.T) {
	const ns = "mgr-webhook-system"
	api, err := testenv.StartForInstalls(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer api.Stop()
	ctx := t.Context()
	kubeconfig, namespace := api.Kubeconfig, ns
	cfg := new(action.Configuration)
	if err := cfg.Init(&genericclioptions.ConfigFlags{KubeConfig: &kubeconfig, Namespace: &namespace}, ns, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	ch := loadChart(t)
	policy := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("mgr.ceph.rook.io/v1alpha1")
		u.SetKind("MgrPolicy")
		u.SetName("site")
		u.Object["spec"] = map[string]any{}
		return u
	}
	crd := func() error {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		return api.Client.Get(ctx, client.ObjectKey{Name: "mgrpolicies.mgr.ceph.rook.io"}, u)
	}
	for _, tc := range []struct {
		values string
		kept   bool
	}{
		{"webhook: {nodeSelector: {mgr-webhook.test/node: none}}\nbootstrap: {nodeSelector: {mgr-webhook.test/node: none}}\n", true},
		{"crds: {keep: false}\nwebhook: {nodeSelector: {mgr-webhook.test/node: none}}\nbootstrap: {nodeSelector: {mgr-webhook.test/node: none}}\n", false},
	} {
		inst := action.NewInstall(cfg)
		inst.ReleaseName, inst.Namespace, inst.CreateNamespace, inst.Timeout = "mgr-webhook", ns, true, time.Minute
		if _, err := inst.Run(ch, values(t, tc.values)); err != nil {
			t.Fatalf("helm install (%q): %v", tc.values, err)
		}
		// The CRD is established once the API serves its kind.
		var cerr error
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
			cerr = api.Client.Create(ctx, policy())
			return cerr == nil || apierrors.IsAlreadyExists(cerr), nil
		}); err != nil {
			t.Fatalf("a site's MgrPolicy: %v", cerr)
		}
		un := action.NewUninstall(cfg)
		un.DisableHooks, un.Timeout, un.Wait = true, time.Minute, true
		if _, err := un.Run("mgr-webhook"); err != nil {
			t.Fatalf("helm uninstall: %v", err)
		}
		if err := crd(); tc.kept && err != nil {
			t.Errorf("crds.keep unset: helm uninstall deleted the MgrPolicy CRD (%v)", err)
		}
		if tc.kept {
			if err := api.Client.Get(ctx, client.ObjectKey{Name: "site"}, policy()); err != nil {
				t.Errorf("the site's MgrPolicy after helm uninstall: %v", err)
			}
			continue
		}
		_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
			return apierrors.IsNotFound(crd()), nil
		})
		if err := crd(); !apierrors.IsNotFound(err) {
			t.Errorf("crds.keep=false: the MgrPolicy CRD after helm uninstall: %v", err)
		}
	}
}

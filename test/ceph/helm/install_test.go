// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package helm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// install installs the chart as release mgr-webhook into ns (created) with
// Helm's install action and the values doc.
func install(t *testing.T, api *testenv.APIServer, ns, doc string) {
	t.Helper()
	kubeconfig, namespace := api.Kubeconfig, ns
	cfg := new(action.Configuration)
	if err := cfg.Init(&genericclioptions.ConfigFlags{KubeConfig: &kubeconfig, Namespace: &namespace}, ns, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	// The Ceph namespace the chart serves by default exists where Rook runs;
	// the chart binds its components there and does not create it.
	if err := api.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testenv.DefaultCephNamespace}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	inst := action.NewInstall(cfg)
	inst.ReleaseName, inst.Namespace, inst.CreateNamespace, inst.Timeout = "mgr-webhook", ns, true, time.Minute
	rel, err := inst.Run(loadChart(t), values(t, doc))
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	t.Logf("release %s v%d: %s", rel.Name, rel.Version, rel.Info.Status)
}

// TestChartInstalledForReal installs the chart (self-signed mode) into a new
// namespace of a real API server with Helm's install action, then runs the
// built mgr-webhook as the chart's Deployment would: as the chart's
// ServiceAccount (so the chart's RBAC must suffice), with the chart's policy,
// reached by the API server through the chart's Service. The webhook injects
// its CA into the chart's webhook configurations, and a minimal mgr applied
// with kubectl is stored complete.
func TestChartInstalledForReal(t *testing.T) {
	const ns = "ceph-admission"
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	binDir := testenv.BuildForTest(t, "mgr-webhook")
	hostIP, err := testenv.HostIP()
	if err != nil {
		t.Fatal(err)
	}
	api, err := testenv.StartAPIServerWith(testenv.APIServerOptions{ServiceRouting: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Stop) // after the processes (cleanups run last-in first-out)
	k8s := api.Client

	install(t, api, ns, "certificates: {mode: self-signed}")

	// The chart's own webhook configurations, not envtest's.
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: "mgr-webhook"}, m); err != nil {
		t.Fatal(err)
	}
	if svc := m.Webhooks[0].ClientConfig.Service; svc == nil || svc.Namespace != ns || svc.Name != "mgr-webhook" {
		t.Fatalf("chart's webhook calls %+v, want Service %s/mgr-webhook", m.Webhooks[0].ClientConfig, ns)
	}

	policy := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mgr-webhook-policy"}, policy); err != nil {
		t.Fatal(err)
	}
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(policy.Data["policy.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	asSA, err := api.KubeconfigAs(testenv.ServiceAccountUser(ns, "mgr-webhook"))
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(asSA)
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	probe, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.ServeServiceLocally(ctx, k8s, ns, "mgr-webhook", "https", hostIP, port); err != nil {
		t.Fatal(err)
	}
	proc, err := testenv.SpawnReady(ctx, filepath.Join(binDir, "mgr-webhook"), filepath.Join(t.TempDir(), "mgr-webhook.log"), probe, time.Minute,
		"--kubeconfig", asSA, "--cert-mode=self-signed", "--namespace="+ns, "--leader-elect", "--cert-dir="+t.TempDir(),
		"--policy="+policyFile, "--host="+hostIP, "--port="+strconv.Itoa(port), "--metrics-bind-address=0",
		"--namespaces="+testenv.DefaultCephNamespace) // as the chart's Deployment, by default
	if err != nil {
		t.Fatal(err)
	}
	proc.StopAtCleanup(t, 10*time.Second)
	poll := func(what string, timeout time.Duration, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: not within %s", what, timeout)
		}
	}
	poll("the webhook's CA in the chart's configurations", 30*time.Second, func() bool {
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		return k8s.Get(ctx, client.ObjectKey{Name: "mgr-webhook"}, m) == nil && len(m.Webhooks[0].ClientConfig.CABundle) > 0 &&
			k8s.Get(ctx, client.ObjectKey{Name: "mgr-webhook"}, v) == nil && len(v.Webhooks[0].ClientConfig.CABundle) > 0
	})

	cluster := testenv.CephCluster{Namespace: "rook-ceph", FSID: "5e1f0c4a-8f61-4a5e-9d57-2b7cf2a0c6d1", MonHost: "[v2:10.0.0.1:3300]", Members: "a", AdminKeyring: "[client.admin]\n"}
	if err := cluster.Create(ctx, k8s); err != nil {
		t.Fatal(err)
	}
	manifest, err := testenv.MinimalMgr(root, "rook-ceph", "a", [2]int32{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	// Until the webhook's cache has the cluster objects just created.
	if werr := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		apply := exec.Command(api.Kubectl, "--kubeconfig", api.Kubeconfig, "apply", "-f", "-")
		apply.Stdin = strings.NewReader(string(manifest))
		out, err = apply.CombinedOutput()
		return err == nil, nil
	}); werr != nil {
		t.Fatalf("a minimal mgr admitted through the chart's webhooks: not within 30s; last kubectl apply: %v: %s", err, out)
	}
	get := exec.Command(api.Kubectl, "--kubeconfig", api.Kubeconfig, "-n", "rook-ceph", "get", "deploy", "rook-ceph-mgr-a", "-o", "yaml")
	stored, err := get.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, stored)
	}
	for _, want := range []string{"--fsid=" + cluster.FSID, "init-set-dashboard-server-addr", "type: Recreate", "rook-ceph-mgr-a-keyring"} {
		if !strings.Contains(string(stored), want) {
			t.Errorf("stored mgr lacks %q (apply said %s)", want, out)
		}
	}
}

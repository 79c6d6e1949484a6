// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package helmchart renders the checkout's chart as helm does, for the tests
// that install it. It lives in the test module: helm is a test-only dependency.
package helmchart

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// RenderChart renders the checkout's chart (charts/mgr-webhook) as
// `helm template --namespace ns --kube-version <v>` does, as release
// mgr-webhook with vals, for the Kubernetes version of the binaries under
// test (KUBEBUILDER_ASSETS), so that the chart's kubeVersion is judged.
func RenderChart(ns string, vals map[string]any) (string, error) {
	rel, err := renderRelease(ns, vals)
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

// renderRelease is the chart installed in memory (a client-only dry run).
func renderRelease(ns string, vals map[string]any) (*release.Release, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	kube, err := KubernetesVersion()
	if err != nil {
		return nil, err
	}
	ch, err := loader.Load(filepath.Join(root, "charts", "mgr-webhook"))
	if err != nil {
		return nil, err
	}
	cfg := &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities,
		Log:          func(string, ...any) {},
	}
	inst := action.NewInstall(cfg)
	inst.DryRun, inst.ClientOnly, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace, inst.KubeVersion = "mgr-webhook", ns, kube
	return inst.Run(ch, vals)
}

// ChartInCheckout renders the chart (RenderChart, values as a YAML document)
// into a kustomization in the checkout (KustomizationInCheckout), so that
// what takes a kustomization (ApplyRBAC, CreateKinds) takes the chart's
// objects too; remove the directory when done.
func ChartInCheckout(ns, valuesDoc string) (string, error) {
	vals, err := chartutil.ReadValues([]byte(valuesDoc))
	if err != nil {
		return "", err
	}
	vals = WithControlPlane(vals)
	manifest, err := RenderChart(ns, vals)
	if err != nil {
		return "", err
	}
	dir, err := testenv.KustomizationInCheckout("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [chart.yaml]\n")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "chart.yaml"), []byte(manifest), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// WithControlPlane gives vals the control plane's CIDR unless they say
// something of networkPolicy themselves: the chart refuses to install
// without it.
func WithControlPlane(vals map[string]any) map[string]any {
	if _, said := vals["networkPolicy"]; !said {
		vals["networkPolicy"] = map[string]any{"controlPlaneCIDRs": []any{testenv.ControlPlaneCIDR}}
	}
	return vals
}

// KubernetesVersion is the version the kube-apiserver under test reports
// (hack/build-binaries.sh stamps it), asked once per test binary: every
// render needs it. CHART_KUBE_VERSION names it instead where no
// kube-apiserver is needed otherwise: make mutation renders the chart for
// the version hack/build-binaries.sh --kube-version prints, without building
// Kubernetes.
var KubernetesVersion = sync.OnceValues(kubernetesVersion)

// kubeVersionVar overrides asking the kube-apiserver.
const kubeVersionVar = "CHART_KUBE_VERSION"

func kubernetesVersion() (*chartutil.KubeVersion, error) {
	if v := os.Getenv(kubeVersionVar); v != "" {
		kv, err := chartutil.ParseKubeVersion(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %w", kubeVersionVar, v, err)
		}
		return kv, nil
	}
	dir, err := testenv.AssetsDir()
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(filepath.Join(dir, "kube-apiserver"), "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver --version: %w", err)
	}
	v, err := chartutil.ParseKubeVersion(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "Kubernetes")))
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver --version said %q (rebuild it with hack/build-binaries.sh, which stamps the version): %w", out, err)
	}
	return v, nil
}

// RenderChartHooks renders the chart's hooks (what RenderChart leaves out),
// as `helm template` writes them.
func RenderChartHooks(ns string, vals map[string]any) (string, error) {
	rel, err := renderRelease(ns, vals)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, h := range rel.Hooks {
		b.WriteString("---\n" + h.Manifest + "\n")
	}
	return b.String(), nil
}

// RenderChartNotes renders the chart's NOTES.txt, as helm install prints it.
func RenderChartNotes(ns string, vals map[string]any) (string, error) {
	rel, err := renderRelease(ns, vals)
	if err != nil {
		return "", err
	}
	return rel.Info.Notes, nil
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package helm tests the chart (charts/mgr-webhook) with Helm's own Go
// packages: it lints, its templates apply to a real API server in both
// certificate modes and equal what kustomize installs, its values reach the
// objects, and, installed for real, its webhooks (served by the built binary
// at the chart's Service) complete a minimal mgr.
package helm

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/test/internal/helmchart"
)

var modes = []string{"self-signed", "cert-manager"}

func chartDir(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "charts", "mgr-webhook")
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// values parses a values document (YAML). A document that says nothing of
// networkPolicy gets the control plane's CIDR, as every install must give
// it (the chart refuses to install without: TestChartRefusesAnUnsafeNamespaceChoice).
func values(t *testing.T, doc string) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValues([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return helmchart.WithControlPlane(v)
}

// template renders the chart as `helm template` does.
func template(t *testing.T, ns string, vals map[string]any) string {
	t.Helper()
	manifest, err := helmchart.RenderChart(ns, vals)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	return manifest
}

// objects splits rendered YAML by kind/name.
func objects(t *testing.T, manifest string) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, u := range documents(t, manifest) {
		out[u.GetKind()+"/"+u.GetName()] = u
	}
	return out
}

// documents are the rendered YAML's objects, in order.
func documents(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := testenv.Objects([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestChartLints: helm lint in both modes, for the Kubernetes under test,
// nothing above INFO; values the schema refuses fail, and so does a
// Kubernetes older than the chart's kubeVersion.
func TestChartLints(t *testing.T) {
	kube, err := helmchart.KubernetesVersion()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range modes {
		l := lint.AllWithKubeVersion(chartDir(t), values(t, "certificates: {mode: "+mode+"}"), "mgr-webhook-system", kube)
		for _, m := range l.Messages {
			if m.Severity > support.InfoSev {
				t.Errorf("%s: %s", mode, m)
			}
		}
	}
	for _, bad := range []string{"certificates: {mode: letsencrypt}", "cephNamespaces: [Rook_Ceph]", "cephNamespaces: [ceph-a, ceph-a]", "cephNamespaces: ceph-a"} {
		l := lint.AllWithKubeVersion(chartDir(t), values(t, bad), "mgr-webhook-system", kube)
		if l.HighestSeverity < support.ErrorSev {
			t.Errorf("%s linted clean: %v", bad, l.Messages)
		}
	}
	// Helm lint does not judge kubeVersion; an install does: the chart's
	// oldest minor is installable, the one before it is not.
	ch := loadChart(t)
	m := regexp.MustCompile(`^>=1\.(\d+)\.0-0$`).FindStringSubmatch(ch.Metadata.KubeVersion)
	if m == nil {
		t.Fatalf("Chart.yaml kubeVersion %q: want >=1.<minor>.0-0", ch.Metadata.KubeVersion)
	}
	floor, _ := strconv.Atoi(m[1])
	for version, allowed := range map[string]bool{
		fmt.Sprintf("v1.%d.0", floor):    true,
		fmt.Sprintf("v1.%d.99", floor-1): false,
	} {
		kv, err := chartutil.ParseKubeVersion(version)
		if err != nil {
			t.Fatal(err)
		}
		inst := action.NewInstall(&action.Configuration{Releases: storage.Init(driver.NewMemory()), KubeClient: &kubefake.PrintingKubeClient{Out: io.Discard},
			Capabilities: chartutil.DefaultCapabilities, Log: func(string, ...any) {}})
		inst.DryRun, inst.ClientOnly, inst.ReleaseName, inst.Namespace, inst.KubeVersion = true, true, "mgr-webhook", "mgr-webhook-system", kv
		_, err = inst.Run(ch, values(t, "{}"))
		if refused := err != nil && strings.Contains(err.Error(), "kubeVersion"); refused == allowed || allowed && err != nil {
			t.Errorf("an install for Kubernetes %s (chart kubeVersion %s): %v; want allowed %t", version, ch.Metadata.KubeVersion, err, allowed)
		}
	}
}

// TestChartTemplatesApply: `helm template` of each mode applies with
// --dry-run=server, and holds exactly what the kustomize overlay of that mode
// installs (the Namespace aside, which Helm creates), field for field but for
// labels, the policy ConfigMap's hash suffix and the chart's policy checksum.
func TestChartTemplatesApply(t *testing.T) {
	api, err := testenv.StartForInstalls("mgr-webhook-system")
	if err != nil {
		t.Fatal(err)
	}
	defer api.Stop()
	cases := map[string]struct {
		values     string
		kustomized string // the same objects from kustomize: an overlay, with components
	}{
		"self-signed":  {"certificates: {mode: self-signed}", "resources: [../manifests/overlays/self-signed]"},
		"cert-manager": {"certificates: {mode: cert-manager}", "resources: [../manifests/overlays/cert-manager]"},
		"cert-manager with monitoring": {
			"{certificates: {mode: cert-manager}, serviceMonitor: {enabled: true}}",
			"resources: [../manifests/overlays/cert-manager]\ncomponents: [../manifests/components/monitoring]",
		},
	}
	// Both set the control plane's CIDR: the chart by value (values), kustomize
	// by the README's patch.
	cidrPatch := "patches:\n  - target: {kind: NetworkPolicy, name: mgr-webhook}\n    patch: |-\n      - {op: replace, path: /spec/ingress/0/from/0/ipBlock/cidr, value: " + testenv.ControlPlaneCIDR + "}\n"
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			manifest := template(t, "mgr-webhook-system", values(t, tc.values))
			path := filepath.Join(t.TempDir(), "chart.yaml")
			if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(api.Kubectl, "--kubeconfig", api.Kubeconfig, "apply", "--dry-run=server", "-f", path).CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, out)
			}
			chartObjs := objects(t, manifest)
			if n := strings.Count(string(out), "(server dry run)"); n != len(chartObjs) {
				t.Errorf("%d of %d objects applied:\n%s", n, len(chartObjs), out)
			}
			dir, err := testenv.KustomizationInCheckout("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + tc.kustomized + "\n" + cidrPatch)
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			kpath, err := testenv.Kustomize(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer os.Remove(kpath)
			kdata, err := os.ReadFile(kpath)
			if err != nil {
				t.Fatal(err)
			}
			kustomizeObjs := map[string]*unstructured.Unstructured{}
			for _, o := range objects(t, string(kdata)) {
				if o.GetKind() == "Namespace" {
					continue
				}
				if o.GetKind() == "ConfigMap" && strings.HasPrefix(o.GetName(), "mgr-webhook-policy-") {
					o.SetName("mgr-webhook-policy")
				}
				kustomizeObjs[o.GetKind()+"/"+o.GetName()] = o
			}
			if got, want := slices.Sorted(maps.Keys(chartObjs)), slices.Sorted(maps.Keys(kustomizeObjs)); !slices.Equal(got, want) {
				t.Fatalf("the chart renders %v, kustomize %v", got, want)
			}
			for key, c := range chartObjs {
				if a, b := comparable(c), comparable(kustomizeObjs[key]); a != b {
					t.Errorf("%s differs from kustomize's:\nchart:\n%s\nkustomize:\n%s", key, a, b)
				}
			}
		})
	}
}

// comparable is an object without what the chart and kustomize may rightly
// differ in: labels, the policy checksum, the policy ConfigMap's name, YAML
// formatting (a policy document as the chart writes it), and the CRDs' keep
// annotation (an instruction to helm uninstall, which kustomize has not).
func comparable(o *unstructured.Unstructured) string {
	o = o.DeepCopy()
	o.SetLabels(nil)
	if a := o.GetAnnotations(); a != nil {
		delete(a, "helm.sh/resource-policy")
		o.SetAnnotations(a)
	}
	unstructured.RemoveNestedField(o.Object, "spec", "template", "metadata", "labels")
	unstructured.RemoveNestedField(o.Object, "spec", "template", "metadata", "annotations")
	if vols, ok, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes"); ok {
		for _, v := range vols {
			if cm, ok := v.(map[string]any)["configMap"].(map[string]any); ok && strings.HasPrefix(cm["name"].(string), "mgr-webhook-policy") {
				cm["name"] = "mgr-webhook-policy"
			}
		}
		_ = unstructured.SetNestedSlice(o.Object, vols, "spec", "template", "spec", "volumes")
	}
	if p, ok, _ := unstructured.NestedString(o.Object, "data", "policy.yaml"); ok {
		var doc map[string]any
		_ = yaml.Unmarshal([]byte(p), &doc)
		canon, _ := yaml.Marshal(doc)
		_ = unstructured.SetNestedField(o.Object, string(canon), "data", "policy.yaml")
	}
	b, _ := yaml.Marshal(o.Object)
	return string(b)
}

// TestChartValues: each documented value reaches the objects.
func TestChartValues(t *testing.T) {
	objs := objects(t, template(t, "default", values(t, `
namespaceOverride: ceph-admission
certificates: {mode: cert-manager}
image:
  webhook: {repository: registry.example.com/mgr-webhook, tag: v9.9.9}
webhook:
  replicas: 3
  priorityClassName: ceph-critical
  resources: {requests: {cpu: 200m, memory: 100Mi}, limits: {memory: 300Mi}}
bootstrap:
  replicas: 1
policy:
  apiVersion: mgr.ceph.rook.io/v1alpha1
  kind: Policy
  allowHostNetwork: true
extraLabels: {team: storage}
`)))
	get := func(key string, path ...string) any {
		t.Helper()
		o, ok := objs[key]
		if !ok {
			t.Fatalf("%s not rendered (have %v)", key, slices.Sorted(maps.Keys(objs)))
		}
		v, _, err := unstructured.NestedFieldNoCopy(o.Object, path...)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	webhookC := get("Deployment/mgr-webhook", "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
	checks := map[string]bool{
		"replicas 3":              fmt.Sprint(get("Deployment/mgr-webhook", "spec", "replicas")) == "3",
		"bootstrap replicas 1":    fmt.Sprint(get("Deployment/mgr-bootstrap", "spec", "replicas")) == "1",
		"priorityClassName":       get("Deployment/mgr-webhook", "spec", "template", "spec", "priorityClassName") == "ceph-critical",
		"image":                   webhookC["image"] == "registry.example.com/mgr-webhook:v9.9.9",
		"resources":               webhookC["resources"].(map[string]any)["limits"].(map[string]any)["memory"] == "300Mi",
		"inline policy":           strings.Contains(get("ConfigMap/mgr-webhook-policy", "data", "policy.yaml").(string), "allowHostNetwork: true"),
		"Certificate (mode)":      objs["Certificate/mgr-webhook-serving"] != nil,
		"no self-signed RBAC":     objs["Role/mgr-webhook-certs"] == nil,
		"pod labels":              get("Deployment/mgr-bootstrap", "spec", "template", "metadata", "labels").(map[string]any)["team"] == "storage",
		"bootstrap default image": strings.HasSuffix(get("Deployment/mgr-bootstrap", "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["image"].(string), ":"+loadChart(t).Metadata.AppVersion),
	}
	for what, ok := range checks {
		if !ok {
			t.Errorf("value not applied: %s", what)
		}
	}
	for key, o := range objs {
		if o.GetLabels()["team"] != "storage" || o.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" {
			t.Errorf("%s labels %v", key, o.GetLabels())
		}
		if ns := o.GetNamespace(); ns != "" && ns != "ceph-admission" && (o.GetKind() != "RoleBinding" || ns != testenv.DefaultCephNamespace) {
			t.Errorf("%s in namespace %s, want namespaceOverride ceph-admission", key, ns)
		}
	}
	var all bytes.Buffer
	for _, o := range objs {
		b, _ := yaml.Marshal(o.Object)
		all.Write(b)
	}
	if bytes.Contains(all.Bytes(), []byte("mgr-webhook-system")) {
		t.Error("a rendered object still names mgr-webhook-system")
	}
}

// TestREADMEHelmBlock runs the install page's helm commands: each `helm
// install` line of the checkout's chart (a --version must be the chart's) is
// rendered with its --set values and applied with
// --dry-run=server to a real API server.
func TestREADMEHelmBlock(t *testing.T) {
	block, err := testenv.READMEBlock("helm")
	if err != nil {
		t.Fatal(err)
	}
	api, err := testenv.StartForInstalls()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Stop()
	ch := loadChart(t)
	ran := 0
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, "#")
		args := strings.Fields(line)
		if len(args) == 0 {
			continue
		}
		if len(args) < 4 || args[0] != "helm" || args[1] != "install" {
			t.Fatalf("README helm block: %q is not a helm install", line)
		}
		ns, create, vals := "default", false, map[string]any{}
		// No release publishes the chart yet: the checkout's, by path.
		if args[3] != "./charts/mgr-webhook" {
			t.Errorf("chart %s, want the checkout's ./charts/mgr-webhook", args[3])
		}
		for i := 4; i < len(args); i++ {
			switch a := args[i]; a {
			case "--namespace", "-n":
				i++
				ns = args[i]
			case "--create-namespace":
				create = true
			case "--version":
				i++
				if args[i] != ch.Metadata.Version {
					t.Errorf("README installs chart %s, the chart is %s", args[i], ch.Metadata.Version)
				}
			case "--set":
				i++
				if err := strvals.ParseInto(args[i], vals); err != nil {
					t.Fatal(err)
				}
			default:
				t.Fatalf("README helm block: flag %s not understood by this test", a)
			}
		}
		if !create {
			t.Errorf("%q: without --create-namespace the namespace must exist", line)
		}
		_ = exec.Command(api.Kubectl, "--kubeconfig", api.Kubeconfig, "create", "namespace", ns).Run()
		// A namespaced install's RoleBindings go into its Ceph namespaces, which exist.
		if list, ok := vals["cephNamespaces"].([]any); ok {
			for _, n := range list {
				_ = exec.Command(api.Kubectl, "--kubeconfig", api.Kubeconfig, "create", "namespace", fmt.Sprint(n)).Run()
			}
		}
		rendered := template(t, ns, vals)
		// The images are the ones the README builds and pushes.
		for key, o := range objects(t, rendered) {
			if o.GetKind() != "Deployment" {
				continue
			}
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				image := fmt.Sprint(c.(map[string]any)["image"])
				if !strings.HasPrefix(image, "registry.example.com/rook-mgr/mgr-") || !strings.HasSuffix(image, ":dev") {
					t.Errorf("%s: %s runs %s, not an image the README builds (registry.example.com/rook-mgr/...:dev)", line, key, image)
				}
			}
		}
		path := filepath.Join(t.TempDir(), "chart.yaml")
		if err := os.WriteFile(path, []byte(rendered), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(api.Kubectl, "--kubeconfig", api.Kubeconfig, "apply", "--dry-run=server", "-f", path).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		ran++
	}
	if ran < 2 {
		t.Errorf("README helm block installs %d ways, want both certificate modes", ran)
	}
}

// TestChartMonitoringValues: serviceMonitor.labels reach what a Prometheus
// selects, prometheusServiceAccount is who may read /metrics, the webhook
// port admits the control plane's CIDRs, and with both switches off none of
// the components' objects is rendered.
func TestChartMonitoringValues(t *testing.T) {
	objs := objects(t, template(t, "mgr-webhook-system", values(t, `
serviceMonitor:
  enabled: true
  labels: {release: kube-prometheus-stack}
  prometheusServiceAccount: {name: kps-prometheus, namespace: observability}
networkPolicy: {controlPlaneCIDRs: [10.0.0.0/24, "fd00::/64"]}
`)))
	for _, key := range []string{"ServiceMonitor/mgr-webhook", "ServiceMonitor/mgr-bootstrap", "PrometheusRule/mgr-webhook"} {
		if o := objs[key]; o == nil || o.GetLabels()["release"] != "kube-prometheus-stack" {
			t.Errorf("%s: not rendered with serviceMonitor.labels (%v)", key, o)
		}
	}
	b := objs["ClusterRoleBinding/mgr-webhook-metrics-reader"]
	if b == nil {
		t.Fatal("no metrics-reader binding")
	}
	subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
	if s := subjects[0].(map[string]any); s["name"] != "kps-prometheus" || s["namespace"] != "observability" {
		t.Errorf("metrics reader bound to %v", s)
	}
	if objs["NetworkPolicy/mgr-webhook"] == nil || objs["Service/mgr-bootstrap-metrics"] == nil {
		t.Errorf("components' objects missing: %v", slices.Sorted(maps.Keys(objs)))
	}
	// The webhook port admits the control plane's CIDRs, and only them.
	ingress, _, _ := unstructured.NestedSlice(objs["NetworkPolicy/mgr-webhook"].Object, "spec", "ingress")
	if f := fmt.Sprint(ingress[0].(map[string]any)["from"]); f != "[map[ipBlock:map[cidr:10.0.0.0/24]] map[ipBlock:map[cidr:fd00::/64]]]" {
		t.Errorf("webhook port peers %s; want the two CIDRs", f)
	}
	for key := range objects(t, template(t, "mgr-webhook-system", values(t, "networkPolicy: {enabled: false}"))) {
		kind, _, _ := strings.Cut(key, "/")
		if kind == "ServiceMonitor" || kind == "PrometheusRule" || kind == "NetworkPolicy" || key == "Service/mgr-bootstrap-metrics" {
			t.Errorf("%s rendered with the components off", key)
		}
	}
}

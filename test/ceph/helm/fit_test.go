// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package helm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/test/internal/helmchart"
)

// fitted sets every value a real cluster needs, as cert-manager's and
// Kyverno's charts name them, to a value of its own.
const fitted = `
global: {imageRegistry: ignored.example.com}
image:
  registry: mirror.example.com:5000
  webhook: {repository: ghcr.io/rook-mgr/mgr-webhook, digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
  bootstrap: {repository: rook-mgr/mgr-bootstrap, tag: v9.9.9}
imagePullSecrets: [{name: regcred}]
webhook:
  replicas: 1
  failurePolicy: Ignore
  timeoutSeconds: 3
  nodeSelector: {node-role.kubernetes.io/infra: ""}
  tolerations: [{key: infra, operator: Exists, effect: NoSchedule}]
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}}
  topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app.kubernetes.io/name: mgr-webhook}}}]
  podAnnotations: {cluster-autoscaler.kubernetes.io/safe-to-evict: "true"}
  podLabels: {cost-center: storage}
  extraArgs: [--zap-log-level=debug]
  extraEnv: [{name: HTTPS_PROXY, value: "http://proxy:3128"}]
  podSecurityContext: {runAsNonRoot: true, runAsUser: 1000680000}
  securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}, seLinuxOptions: {level: "s0:c26,c5"}}
bootstrap:
  replicas: 3
  nodeSelector: {kubernetes.io/os: linux}
  tolerations: [{key: ceph, operator: Exists}]
  podAnnotations: {a: b}
  podLabels: {c: d}
  extraArgs: [--max-concurrent-reconciles=4]
  extraEnv: [{name: NO_PROXY, value: ".svc"}]
`

// TestChartFitsRealClusters: every value of fitted reaches the objects it is
// for, the result applies to a real API server, and the defaults add none
// of it.
func TestChartFitsRealClusters(t *testing.T) {
	objs := objects(t, template(t, "mgr-webhook-system", values(t, fitted)))
	pod := func(name string) map[string]any {
		t.Helper()
		o := objs["Deployment/"+name]
		if o == nil {
			t.Fatalf("no Deployment/%s", name)
		}
		spec, _, _ := unstructured.NestedMap(o.Object, "spec", "template")
		return spec
	}
	field := func(obj map[string]any, path ...string) string {
		t.Helper()
		v, _, err := unstructured.NestedFieldNoCopy(obj, path...)
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := v.(float64); ok { // JSON numbers
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
		return fmt.Sprint(v)
	}
	wh, bs := pod("mgr-webhook"), pod("mgr-bootstrap")
	container := func(p map[string]any) map[string]any {
		cs, _, _ := unstructured.NestedSlice(p, "spec", "containers")
		return cs[0].(map[string]any)
	}
	hooks := func(kind string) []any {
		o := objs[kind+"/mgr-webhook"]
		if o == nil {
			t.Fatalf("no %s", kind)
		}
		h, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		return h
	}
	mutating, validating := hooks("MutatingWebhookConfiguration")[0].(map[string]any), hooks("ValidatingWebhookConfiguration")[0].(map[string]any)
	pdb := objs["PodDisruptionBudget/mgr-webhook"]
	quota := objs["ResourceQuota/mgr-webhook-critical-pods"]
	checks := map[string]bool{
		"image registry + digest":      container(wh)["image"] == "mirror.example.com:5000/rook-mgr/mgr-webhook@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"image registry + tag":         container(bs)["image"] == "mirror.example.com:5000/rook-mgr/mgr-bootstrap:v9.9.9",
		"imagePullSecrets (webhook)":   field(wh, "spec", "imagePullSecrets") == "[map[name:regcred]]",
		"imagePullSecrets (bootstrap)": field(bs, "spec", "imagePullSecrets") == "[map[name:regcred]]",
		"failurePolicy (mutating)":     mutating["failurePolicy"] == "Ignore",
		"failurePolicy (validating)":   validating["failurePolicy"] == "Ignore",
		"timeoutSeconds":               fmt.Sprint(mutating["timeoutSeconds"]) == "3" && fmt.Sprint(validating["timeoutSeconds"]) == "3",
		"nodeSelector":                 field(wh, "spec", "nodeSelector") == "map[node-role.kubernetes.io/infra:]" && field(bs, "spec", "nodeSelector") == "map[kubernetes.io/os:linux]",
		"tolerations":                  strings.Contains(field(wh, "spec", "tolerations"), "key:infra") && strings.Contains(field(bs, "spec", "tolerations"), "key:ceph"),
		"affinity (merged, as Helm merges maps, with the default anti-affinity)": strings.Contains(field(wh, "spec", "affinity"), "nodeAffinity") && strings.Contains(field(wh, "spec", "affinity"), "podAntiAffinity"),
		"topologySpreadConstraints":      strings.Contains(field(wh, "spec", "topologySpreadConstraints"), "topology.kubernetes.io/zone"),
		"podAnnotations":                 field(wh, "metadata", "annotations", "cluster-autoscaler.kubernetes.io/safe-to-evict") == "true" && field(bs, "metadata", "annotations", "a") == "b",
		"policy checksum kept":           field(wh, "metadata", "annotations", "checksum/policy") != "<nil>",
		"podLabels":                      field(wh, "metadata", "labels", "cost-center") == "storage" && field(bs, "metadata", "labels", "c") == "d",
		"selector label kept":            field(wh, "metadata", "labels", "app.kubernetes.io/name") == "mgr-webhook",
		"extraArgs after the chart's":    strings.HasSuffix(fmt.Sprint(container(wh)["args"]), "--zap-log-level=debug]") && strings.HasSuffix(fmt.Sprint(container(bs)["args"]), "--max-concurrent-reconciles=4]"),
		"extraEnv after the chart's":     strings.Contains(fmt.Sprint(container(wh)["env"]), "HTTPS_PROXY") && strings.Contains(fmt.Sprint(container(bs)["env"]), "NO_PROXY") && strings.Contains(fmt.Sprint(container(wh)["env"]), "POD_NAME"),
		"podSecurityContext":             field(wh, "spec", "securityContext", "runAsUser") == "1000680000",
		"container securityContext":      field(container(wh), "securityContext", "seLinuxOptions", "level") == "s0:c26,c5",
		"PDB follows one replica":        pdb != nil && field(pdb.Object, "spec", "maxUnavailable") == "1" && field(pdb.Object, "spec", "minAvailable") == "<nil>",
		"quota counts the replicas":      quota != nil && field(quota.Object, "spec", "hard", "pods") == "10",
		"webhook replicas":               field(objs["Deployment/mgr-webhook"].Object, "spec", "replicas") == "1",
		"bootstrap security by default":  field(bs, "spec", "securityContext", "runAsUser") == "<nil>" && field(bs, "spec", "securityContext", "runAsNonRoot") == "true",
		"bootstrap container by default": field(container(bs), "securityContext", "readOnlyRootFilesystem") == "true",
	}
	for what, ok := range checks {
		if !ok {
			t.Errorf("value not applied: %s", what)
		}
	}
	// A default map is dropped by null, as Helm documents.
	noAnti := objects(t, template(t, "mgr-webhook-system", values(t, "webhook: {affinity: {podAntiAffinity: null}}")))
	if a := field(noAnti["Deployment/mgr-webhook"].Object, "spec", "template", "spec", "affinity"); a != "<nil>" {
		t.Errorf("affinity %s with podAntiAffinity: null, want none", a)
	}
	// More replicas than the quota's floor: it grows with them (surge included).
	big := objects(t, template(t, "mgr-webhook-system", values(t, "webhook: {replicas: 5}\nbootstrap: {replicas: 2}")))
	if got := field(big["ResourceQuota/mgr-webhook-critical-pods"].Object, "spec", "hard", "pods"); got != "14" {
		t.Errorf("quota pods %s for 5+2 replicas, want 14", got)
	}
	// The defaults add none of the optional fields.
	def := objects(t, template(t, "mgr-webhook-system", values(t, "{}")))
	for _, name := range []string{"mgr-webhook", "mgr-bootstrap"} {
		spec, _, _ := unstructured.NestedMap(def["Deployment/"+name].Object, "spec", "template", "spec")
		for _, key := range []string{"imagePullSecrets", "nodeSelector", "tolerations", "topologySpreadConstraints"} {
			if _, ok := spec[key]; ok {
				t.Errorf("%s: %s rendered by default", name, key)
			}
		}
		if sc := fmt.Sprint(spec["securityContext"]); strings.Contains(sc, "runAsUser") {
			t.Errorf("%s pins a uid by default: %s", name, sc)
		}
	}
	for _, name := range []string{"mgr-webhook", "mgr-bootstrap"} {
		if !strings.Contains(fmt.Sprint(def["Deployment/"+name].Object), "podAntiAffinity") {
			t.Errorf("%s: the default affinity (replicas on different nodes) is gone", name)
		}
	}

	api, err := testenv.StartForInstalls("mgr-webhook-system")
	if err != nil {
		t.Fatal(err)
	}
	defer api.Stop()
	path := filepath.Join(t.TempDir(), "fitted.yaml")
	if err := os.WriteFile(path, []byte(template(t, "mgr-webhook-system", values(t, fitted))), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(api.Kubectl, "--kubeconfig", api.Kubeconfig, "apply", "--dry-run=server", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply --dry-run=server of the fitted chart: %v\n%s", err, out)
	}
}

// TestChartSchemaFits: the schema takes what wrappers and users pass
// (global, the fitted values) and still refuses typos and bad values.
func TestChartSchemaFits(t *testing.T) {
	kube, err := helmchart.KubernetesVersion()
	if err != nil {
		t.Fatal(err)
	}
	for doc, ok := range map[string]bool{
		fitted:                                              true,
		"global: {storageClass: fast}":                      true,
		"webhook: {nodeSelectr: {}}":                        false,
		"webhook: {failurePolicy: Deny}":                    false,
		"webhook: {timeoutSeconds: 31}":                     false,
		"bootstrap: {failurePolicy: Fail}":                  false,
		"image: {webhook: {repository: x, digest: latest}}": false,
		"webhook: {extraArgs: [zap-log-level=debug]}":       false,
		"imagePullSecrets: [regcred]":                       false,
	} {
		l := lint.AllWithKubeVersion(chartDir(t), values(t, doc), "mgr-webhook-system", kube)
		if clean := l.HighestSeverity < support.ErrorSev; clean != ok {
			t.Errorf("%q: linted clean %v, want %v: %v", doc, clean, ok, l.Messages)
		}
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Command gen-chart writes the Helm chart's templates/generated.yaml from the
// kustomize overlays, so that the chart and kustomize install the same
// objects from one source: RBAC and webhook configurations (themselves
// generated from the code's markers), Deployments, Service, PDB, policy and
// certificates. An object the two overlays render alike is written once; one
// they render differently, or only one of them has, is written under the
// certificates.mode it belongs to. What a user may set through values is
// replaced by the template expression named in the table below; every
// mention of the install namespace becomes the release's namespace.
//
// It also writes the chart's README, a table of values.yaml.
//
//	go run ./hack/gen-chart -kubectl <kubectl> -out charts/mgr-webhook/templates/generated.yaml -readme charts/mgr-webhook/README.md
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// installNamespace is the namespace the overlays install into.
const installNamespace = "mgr-webhook-system"

// modes are the chart's certificates.mode values, with their overlays.
var modes = []struct{ name, overlay string }{
	{"self-signed", "manifests/overlays/self-signed"},
	{"cert-manager", "manifests/overlays/cert-manager"},
}

// components are kustomize components the chart turns on by a value: their
// objects (what an overlay gains with them) are written under it.
var components = []struct{ dir, enabled string }{
	{"manifests/components/monitoring", ".Values.serviceMonitor.enabled"},
	{"manifests/components/network-policy", ".Values.networkPolicy.enabled"},
}

// value is a field a user sets through values.
type value struct {
	kind, name string
	path       []string // into the object; "0" indexes a list
	expr       string   // the template expression
	block      bool     // a map or list: rendered with toYaml under its key
	optional   bool     // left out when the value is empty
	optBlock   bool     // a map or list left out when empty
	ipBlocks   bool     // a list of CIDRs: rendered as NetworkPolicy peers, left out when empty
}

var values = []value{
	{kind: "Deployment", name: "mgr-webhook", path: []string{"spec", "replicas"}, expr: ".Values.webhook.replicas"},
	{kind: "Deployment", name: "mgr-webhook", path: []string{"spec", "template", "spec", "priorityClassName"}, expr: ".Values.webhook.priorityClassName", optional: true},
	{kind: "Deployment", name: "mgr-webhook", path: []string{"spec", "template", "spec", "containers", "0", "image"}, expr: `include "mgr-webhook.image" (list . .Values.image.webhook) | quote`},
	{kind: "Deployment", name: "mgr-webhook", path: []string{"spec", "template", "spec", "containers", "0", "imagePullPolicy"}, expr: ".Values.image.pullPolicy"},
	{kind: "Deployment", name: "mgr-webhook", path: []string{"spec", "template", "spec", "containers", "0", "resources"}, expr: "toYaml .Values.webhook.resources", block: true},
	{kind: "Deployment", name: "mgr-bootstrap", path: []string{"spec", "replicas"}, expr: ".Values.bootstrap.replicas"},
	{kind: "Deployment", name: "mgr-bootstrap", path: []string{"spec", "template", "spec", "priorityClassName"}, expr: ".Values.bootstrap.priorityClassName", optional: true},
	{kind: "Deployment", name: "mgr-bootstrap", path: []string{"spec", "template", "spec", "containers", "0", "image"}, expr: `include "mgr-webhook.image" (list . .Values.image.bootstrap) | quote`},
	{kind: "Deployment", name: "mgr-bootstrap", path: []string{"spec", "template", "spec", "containers", "0", "imagePullPolicy"}, expr: ".Values.image.pullPolicy"},
	{kind: "Deployment", name: "mgr-bootstrap", path: []string{"spec", "template", "spec", "containers", "0", "resources"}, expr: "toYaml .Values.bootstrap.resources", block: true},
	{kind: "MutatingWebhookConfiguration", name: "mgr-webhook", path: []string{"webhooks", "0", "failurePolicy"}, expr: ".Values.webhook.failurePolicy"},
	{kind: "MutatingWebhookConfiguration", name: "mgr-webhook", path: []string{"webhooks", "0", "timeoutSeconds"}, expr: ".Values.webhook.timeoutSeconds"},
	{kind: "ValidatingWebhookConfiguration", name: "mgr-webhook", path: []string{"webhooks", "0", "failurePolicy"}, expr: ".Values.webhook.failurePolicy"},
	{kind: "ValidatingWebhookConfiguration", name: "mgr-webhook", path: []string{"webhooks", "0", "timeoutSeconds"}, expr: ".Values.webhook.timeoutSeconds"},
	{kind: "ResourceQuota", name: "mgr-webhook-critical-pods", path: []string{"spec", "hard", "pods"}, expr: "max 10 (mul 2 (add .Values.webhook.replicas .Values.bootstrap.replicas)) | quote"},
	{kind: "ConfigMap", name: "mgr-webhook-policy", path: []string{"data", "policy.yaml"}, expr: ""}, // written as a block scalar, below
	{kind: "ClusterRoleBinding", name: "mgr-webhook-metrics-reader", path: []string{"subjects", "0", "name"}, expr: ".Values.serviceMonitor.prometheusServiceAccount.name"},
	{kind: "ClusterRoleBinding", name: "mgr-webhook-metrics-reader", path: []string{"subjects", "0", "namespace"}, expr: ".Values.serviceMonitor.prometheusServiceAccount.namespace"},
	{kind: "NetworkPolicy", name: "mgr-webhook", path: []string{"spec", "ingress", "0", "from"}, expr: ".Values.networkPolicy.controlPlaneCIDRs", ipBlocks: true},
}

// podValues are the values of both Deployments' pods, under each one's
// component key (webhook, bootstrap), as cert-manager's and Kyverno's charts
// name them.
var podValues = []struct {
	path            []string
	key             string
	block, optional bool
	component       bool // false: a value of the whole chart
	// global is the value's expression with global's (umbrella charts set
	// global.* for every subchart); %s is the chart's own expression.
	global string
}{
	{path: []string{"spec", "template", "spec", "imagePullSecrets"}, key: "imagePullSecrets", optional: true,
		global: `concat (%s | default list) (dig "imagePullSecrets" list (.Values.global | default dict))`},
	// The component's nodeSelector wins over global's, key by key.
	{path: []string{"spec", "template", "spec", "nodeSelector"}, key: "nodeSelector", optional: true, component: true,
		global: `merge (dict) (%s | default dict) (dig "nodeSelector" dict (.Values.global | default dict))`},
	{path: []string{"spec", "template", "spec", "tolerations"}, key: "tolerations", optional: true, component: true},
	{path: []string{"spec", "template", "spec", "affinity"}, key: "affinity", optional: true, component: true},
	{path: []string{"spec", "template", "spec", "topologySpreadConstraints"}, key: "topologySpreadConstraints", optional: true, component: true},
	{path: []string{"spec", "template", "spec", "securityContext"}, key: "podSecurityContext", block: true, component: true},
	{path: []string{"spec", "template", "spec", "containers", "0", "securityContext"}, key: "securityContext", block: true, component: true},
}

func init() {
	for _, c := range []string{"webhook", "bootstrap"} {
		for _, v := range podValues {
			expr := ".Values." + v.key
			if v.component {
				expr = ".Values." + c + "." + v.key
			}
			if v.global != "" {
				expr = fmt.Sprintf(v.global, expr)
			}
			if v.block {
				expr = "toYaml " + expr
			}
			values = append(values, value{kind: "Deployment", name: "mgr-" + c, path: v.path, expr: expr, block: v.block, optBlock: v.optional})
		}
	}
}

// monitoringSwitches turn single objects of the monitoring component off
// (Kind/name: the value), where a site loads its own alerts or dashboards.
var monitoringSwitches = map[string]string{
	"PrometheusRule/mgr-webhook":      ".Values.serviceMonitor.prometheusRule.enabled",
	"ConfigMap/mgr-webhook-dashboard": ".Values.serviceMonitor.dashboard.enabled",
}

// monitoringKinds carry serviceMonitor.labels, which a Prometheus selects them by.
var monitoringKinds = []string{"ServiceMonitor", "PrometheusRule"}

// namespacedBindings are the ClusterRoleBindings that a namespaced install
// (value cephNamespaces) replaces by a RoleBinding of the same ClusterRole in
// each Ceph namespace: what they grant is namespaced, and outside those
// namespaces the components have nothing to do.
var namespacedBindings = []string{"mgr-webhook", "mgr-bootstrap"}

const (
	namespacesMark = "__CHART_NAMESPACES__"
	// The Deployments' CEPH_NAMESPACE, which their --namespaces reads.
	cephNamespacesMark = "__CHART_CEPH_NAMESPACES__"
	// The component's podAnnotations, extraArgs and extraEnv.
	podAnnotationsMark = "__CHART_POD_ANNOTATIONS__"
	extraArgsMark      = "__CHART_EXTRA_ARGS__"
	extraEnvMark       = "__CHART_EXTRA_ENV__"
	labelsMark         = "__CHART_LABELS__"
	podLabelsMark      = "__CHART_POD_LABELS__"
	policyMark         = "__CHART_POLICY__"
	policyCheck        = "__CHART_POLICY_CHECKSUM__"
	// The CRDs' keep annotation, while crds.keep.
	crdKeepMark = "__CHART_CRD_KEEP__"
)

func main() {
	kubectl := flag.String("kubectl", "kubectl", "the kubectl whose kustomize builds the overlays")
	out := flag.String("out", "charts/mgr-webhook/templates/generated.yaml", "the file to write")
	readme := flag.String("readme", "charts/mgr-webhook/README.md", "the chart README to write from its values.yaml")
	flag.Parse()
	if err := run(*kubectl, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen-chart:", err)
		os.Exit(1)
	}
	if err := writeReadme("charts/mgr-webhook/values.yaml", *readme); err != nil {
		fmt.Fprintln(os.Stderr, "gen-chart: README:", err)
		os.Exit(1)
	}
}

type rendered struct {
	key  string // kind/name, for ordering
	text string
}

func run(kubectl, out string) error {
	perMode := map[string]map[string]string{}
	var order []string
	var extra []rendered
	clusterWide := map[string]string{}
	for _, m := range modes {
		dir, err := clusterWideCopy(m.overlay)
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		clusterWide[m.name] = dir
		objs, err := build(kubectl, dir)
		if err != nil {
			return err
		}
		perMode[m.name] = map[string]string{}
		for _, o := range objs {
			text, err := templated(o)
			if err != nil {
				return fmt.Errorf("%s %s/%s: %w", m.overlay, o.GetKind(), o.GetName(), err)
			}
			if text == "" {
				continue
			}
			key := o.GetKind() + "/" + o.GetName()
			perMode[m.name][key] = text
			if !slices.Contains(order, key) {
				order = append(order, key)
			}
		}
	}
	for _, c := range components {
		objs, err := buildWith(kubectl, clusterWide[modes[0].name], c.dir)
		if err != nil {
			return err
		}
		for _, o := range objs {
			text, err := templated(o) // names as the chart has them (the policy ConfigMap's)
			if err != nil {
				return fmt.Errorf("%s %s/%s: %w", c.dir, o.GetKind(), o.GetName(), err)
			}
			key := o.GetKind() + "/" + o.GetName()
			if _, inBase := perMode[modes[0].name][key]; inBase || text == "" {
				continue
			}
			cond := c.enabled
			if sub, ok := monitoringSwitches[key]; ok && c.dir == components[0].dir {
				cond = fmt.Sprintf("and %s %s", c.enabled, sub)
			}
			extra = append(extra, rendered{key: key, text: fmt.Sprintf("{{- if %s }}\n%s{{- end }}\n", cond, text)})
		}
	}
	var b strings.Builder
	b.WriteString("{{- /* Generated by hack/gen-chart from manifests/overlays (make manifests); do not edit. */ -}}\n")
	// enabled=false (an umbrella chart's switch) renders nothing.
	b.WriteString("{{- if .Values.enabled }}\n")
	a, c := perMode[modes[0].name], perMode[modes[1].name]
	for _, key := range order {
		ta, inA := a[key]
		tc, inC := c[key]
		b.WriteString("---\n")
		var doc string
		switch {
		case inA && inC && ta == tc:
			doc = ta
		case inA && inC:
			doc = fmt.Sprintf("{{- if eq .Values.certificates.mode %q }}\n%s{{- else }}\n%s{{- end }}\n", modes[0].name, ta, tc)
		case inA:
			doc = fmt.Sprintf("{{- if eq .Values.certificates.mode %q }}\n%s{{- end }}\n", modes[0].name, ta)
		default:
			doc = fmt.Sprintf("{{- if eq .Values.certificates.mode %q }}\n%s{{- end }}\n", modes[1].name, tc)
		}
		if strings.HasPrefix(key, "CustomResourceDefinition/") {
			// crds.enabled=false: the CRDs are installed otherwise (GitOps, a
			// CRD chart); the chart then needs them to be there.
			doc = fmt.Sprintf("{{- if .Values.crds.enabled }}\n%s{{- end }}\n", doc)
		}
		b.WriteString(doc)
	}
	for _, e := range extra {
		b.WriteString("---\n" + e.text)
	}
	b.WriteString("{{- end }}\n")
	return os.WriteFile(out, []byte(b.String()), 0o644)
}

// chartParts are the parts of an overlay the chart writes from its values:
// what makes it namespaced (to rook-ceph), which the chart writes from
// cephNamespaces for any number of namespaces, and the NetworkPolicies, which
// it writes under networkPolicy.enabled (components, above).
var chartParts = []string{"../../components/ceph-namespace", "../../follow-ceph-namespace", "../../components/network-policy"}

// clusterWideCopy is overlay without chartParts: a copy of its
// directory beside it (so its relative paths still resolve), with those
// entries left out of its kustomization. The caller removes it.
func clusterWideCopy(overlay string) (dir string, err error) {
	if dir, err = os.MkdirTemp(filepath.Dir(overlay), ".gen-chart-"); err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if err := os.CopyFS(dir, os.DirFS(overlay)); err != nil {
		return "", err
	}
	file := filepath.Join(dir, "kustomization.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		return "", err
	}
	found := 0
	for _, key := range []string{"components", "transformers"} {
		entries, _ := k[key].([]any)
		kept := slices.DeleteFunc(entries, func(e any) bool {
			if s, ok := e.(string); ok && slices.Contains(chartParts, s) {
				found++
				return true
			}
			return false
		})
		if len(kept) == 0 {
			delete(k, key)
		} else {
			k[key] = kept
		}
	}
	if found != len(chartParts) {
		return "", fmt.Errorf("%s: lists %d of %v; the chart renders the overlay without them", overlay, found, chartParts)
	}
	if data, err = yaml.Marshal(k); err != nil {
		return "", err
	}
	return dir, os.WriteFile(file, data, 0o644)
}

// buildWith builds overlay with a component added, through a kustomization
// in the checkout (kustomize takes relative paths only).
func buildWith(kubectl, overlay, component string) ([]*unstructured.Unstructured, error) {
	dir, err := os.MkdirTemp(".", ".gen-chart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	k := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../%s]\ncomponents: [../%s]\n", overlay, component)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		return nil, err
	}
	return build(kubectl, dir)
}

func build(kubectl, dir string) ([]*unstructured.Unstructured, error) {
	data, err := exec.Command(kubectl, "kustomize", dir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("kubectl kustomize %s: %v: %s", dir, err, ee.Stderr)
		}
		return nil, err
	}
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, err
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// templated is one object as a chart template ("" for one the chart leaves
// out: the Namespace, which Helm's --create-namespace makes).
func templated(o *unstructured.Unstructured) (string, error) {
	if o.GetKind() == "Namespace" {
		return "", nil
	}
	// kustomize's hash suffix: Helm rolls the pods by a checksum instead.
	if o.GetKind() == "ConfigMap" && strings.HasPrefix(o.GetName(), "mgr-webhook-policy-") {
		o.SetName("mgr-webhook-policy")
	}
	if o.GetKind() == "Deployment" {
		vols, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
		for _, v := range vols {
			if cm, ok := v.(map[string]any)["configMap"].(map[string]any); ok && strings.HasPrefix(cm["name"].(string), "mgr-webhook-policy-") {
				cm["name"] = "mgr-webhook-policy"
			}
		}
		if err := unstructured.SetNestedSlice(o.Object, vols, "spec", "template", "spec", "volumes"); err != nil {
			return "", err
		}
		podLabels, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
		podLabels[podLabelsMark] = ""
		if err := unstructured.SetNestedStringMap(o.Object, podLabels, "spec", "template", "metadata", "labels"); err != nil {
			return "", err
		}
		if o.GetName() == "mgr-webhook" || o.GetName() == "mgr-bootstrap" {
			if err := unstructured.SetNestedStringMap(o.Object, map[string]string{"checksum/policy": policyCheck, podAnnotationsMark: ""}, "spec", "template", "metadata", "annotations"); err != nil {
				return "", err
			}
		}
	}
	if o.GetKind() == "Deployment" && (o.GetName() == "mgr-webhook" || o.GetName() == "mgr-bootstrap") {
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		args = append(args, extraArgsMark)
		if err := unstructured.SetNestedStringSlice(containers[0].(map[string]any), args, "args"); err != nil {
			return "", err
		}
		env, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "env")
		for _, e := range env {
			if e := e.(map[string]any); e["name"] == "CEPH_NAMESPACE" {
				e["value"] = cephNamespacesMark
			}
		}
		if err := unstructured.SetNestedSlice(containers[0].(map[string]any), append(env, extraEnvMark), "env"); err != nil {
			return "", err
		}
		if err := unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers"); err != nil {
			return "", err
		}
	}
	if o.GetKind() == "MutatingWebhookConfiguration" || o.GetKind() == "ValidatingWebhookConfiguration" {
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, h := range hooks {
			exprs, _, _ := unstructured.NestedSlice(h.(map[string]any), "namespaceSelector", "matchExpressions")
			if err := unstructured.SetNestedSlice(h.(map[string]any), append(exprs, namespacesMark), "namespaceSelector", "matchExpressions"); err != nil {
				return "", err
			}
		}
		if err := unstructured.SetNestedSlice(o.Object, hooks, "webhooks"); err != nil {
			return "", err
		}
	}
	// mgr-policy judges what the mutating webhook judges, and mgr-workloads
	// the Pods and workloads beside those mgrs: a namespaced install's Ceph
	// namespaces only.
	if o.GetKind() == "ValidatingAdmissionPolicy" && (o.GetName() == "mgr-policy" || o.GetName() == "mgr-workloads") {
		exprs, _, _ := unstructured.NestedSlice(o.Object, "spec", "matchConstraints", "namespaceSelector", "matchExpressions")
		if err := unstructured.SetNestedSlice(o.Object, append(exprs, namespacesMark), "spec", "matchConstraints", "namespaceSelector", "matchExpressions"); err != nil {
			return "", err
		}
	}
	if o.GetKind() == "CustomResourceDefinition" {
		// helm uninstall would delete the CRDs, and with them the site's
		// MgrPolicies and CephReleases: kept unless crds.keep=false.
		annotations := o.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[crdKeepMark] = ""
		o.SetAnnotations(annotations)
	}
	if o.GetKind() == "ClusterRoleBinding" && slices.Contains(namespacedBindings, o.GetName()) {
		return namespacedBinding(o)
	}
	return templateObject(o)
}

// templateObject writes o as a template: the chart's labels, the values'
// expressions, and the release's namespace for the install namespace.
func templateObject(o *unstructured.Unstructured) (string, error) {
	labels := o.GetLabels()
	delete(labels, "app.kubernetes.io/part-of") // the chart's labels carry it
	if labels == nil {
		labels = map[string]string{}
	}
	labels[labelsMark] = ""
	o.SetLabels(labels)

	marks := map[string]value{}
	for i, v := range values {
		if v.kind != o.GetKind() || v.name != o.GetName() {
			continue
		}
		mark := fmt.Sprintf("__CHART_VALUE_%d__", i)
		if v.expr == "" {
			mark = policyMark
		}
		if err := set(o.Object, v.path, mark); err != nil {
			return "", fmt.Errorf("%v: %w", v.path, err)
		}
		marks[mark] = v
	}
	data, err := yaml.Marshal(o.Object)
	if err != nil {
		return "", err
	}
	// Text of the object's own that looks like a template action (the
	// PrometheusRule's {{ $value }}) stays text.
	text := strings.ReplaceAll(string(data), "{{", `{{ "{{" }}`)
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		pad := strings.Repeat(" ", indent)
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, labelsMark+":"):
			fmt.Fprintf(&b, "%s{{- include \"mgr-webhook.labels\" $ | nindent %d }}\n", pad, indent)
			if slices.Contains(monitoringKinds, o.GetKind()) {
				fmt.Fprintf(&b, "%s{{- with .Values.serviceMonitor.labels }}{{ toYaml . | nindent %d }}{{ end }}\n", pad, indent)
			}
			continue
		case strings.HasPrefix(trimmed, podLabelsMark+":"):
			fmt.Fprintf(&b, "%sapp.kubernetes.io/instance: {{ $.Release.Name }}\n", pad)
			fmt.Fprintf(&b, "%s{{- with .Values.extraLabels }}{{ toYaml . | nindent %d }}{{ end }}\n", pad, indent)
			if c := component(o); c != "" {
				fmt.Fprintf(&b, "%s{{- with .Values.%s.podLabels }}{{ toYaml . | nindent %d }}{{ end }}\n", pad, c, indent)
			}
			continue
		case strings.HasPrefix(trimmed, crdKeepMark+":"):
			fmt.Fprintf(&b, "%s{{- if .Values.crds.keep }}\n%shelm.sh/resource-policy: keep\n%s{{- end }}\n", pad, pad, pad)
			continue
		case strings.HasPrefix(trimmed, podAnnotationsMark+":"):
			fmt.Fprintf(&b, "%s{{- with .Values.%s.podAnnotations }}{{ toYaml . | nindent %d }}{{ end }}\n", pad, component(o), indent)
			continue
		case trimmed == "- "+extraArgsMark:
			fmt.Fprintf(&b, "%s{{- with .Values.%s.extraArgs }}{{ toYaml . | nindent %d }}{{ end }}\n", pad, component(o), indent)
			continue
		case trimmed == "- "+extraEnvMark:
			fmt.Fprintf(&b, "%s{{- with .Values.%s.extraEnv }}{{ toYaml . | nindent %d }}{{ end }}\n", pad, component(o), indent)
			continue
		case strings.HasSuffix(trimmed, ": "+policyMark):
			key, _, _ := strings.Cut(trimmed, ":")
			fmt.Fprintf(&b, "%s%s: |\n%s{{- toYaml .Values.policy | nindent %d }}\n", pad, key, pad, indent+2)
			continue
		case trimmed == "value: "+cephNamespacesMark:
			// --namespaces=$(CEPH_NAMESPACE), as the overlays have it; empty: all.
			fmt.Fprintf(&b, "%svalue: {{ join \",\" $.Values.cephNamespaces | quote }}\n", pad)
			continue
		case trimmed == "- "+namespacesMark:
			// A namespaced install's webhooks are called for its Ceph namespaces only.
			fmt.Fprintf(&b, "%s{{- with $.Values.cephNamespaces }}\n%s- key: kubernetes.io/metadata.name\n%s  operator: In\n%s  values: {{ toJson . }}\n%s{{- end }}\n", pad, pad, pad, pad, pad)
			continue
		case strings.HasPrefix(trimmed, "namespace: "+namespacesMark):
			fmt.Fprintf(&b, "%snamespace: {{ . | quote }}\n", pad)
			continue
		case strings.Contains(line, policyCheck):
			line = strings.Replace(line, policyCheck, "{{ toYaml .Values.policy | sha256sum }}", 1)
		}
		for mark, v := range marks {
			if !strings.Contains(line, mark) {
				continue
			}
			if v.ipBlocks {
				// The peers open their rule's list item ("- from:", the
				// first key): the dash stays when there are none, and the
				// rule's other keys follow as its mapping.
				key, _, _ := strings.Cut(strings.TrimPrefix(trimmed, "- "), ":")
				in := pad + "  "
				line = fmt.Sprintf("%s- {{- with %s }} %s:\n%s{{- range . }}\n%s- ipBlock: {cidr: {{ . | quote }}}\n%s{{- end }}\n%s{{- end }}\n",
					pad, v.expr, key, in, in, in, in)
			} else if v.optBlock {
				key, _, _ := strings.Cut(trimmed, ":")
				line = fmt.Sprintf("%s{{- with %s }}\n%s%s:\n%s{{- toYaml . | nindent %d }}\n%s{{- end }}\n", pad, v.expr, pad, key, pad, indent+2, pad)
			} else if v.optional {
				key, _, _ := strings.Cut(trimmed, ":")
				line = fmt.Sprintf("%s{{- with %s }}\n%s%s: {{ . | quote }}\n%s{{- end }}\n", pad, v.expr, pad, key, pad)
			} else if v.block {
				key, _, _ := strings.Cut(trimmed, ":")
				line = fmt.Sprintf("%s%s:\n%s{{- %s | nindent %d }}\n", pad, key, pad, v.expr, indent+2)
			} else {
				line = strings.Replace(line, mark, "{{ "+v.expr+" }}", 1)
			}
		}
		b.WriteString(strings.ReplaceAll(line, installNamespace, `{{ include "mgr-webhook.namespace" $ }}`))
	}
	return b.String(), nil
}

// component is the values key of a component's Deployment ("" for others).
func component(o *unstructured.Unstructured) string {
	if o.GetKind() == "Deployment" && (o.GetName() == "mgr-webhook" || o.GetName() == "mgr-bootstrap") {
		return strings.TrimPrefix(o.GetName(), "mgr-")
	}
	return ""
}

// namespacedBinding is a ClusterRoleBinding of namespacedBindings as the
// chart writes it: in a namespaced install a RoleBinding of the same
// ClusterRole in each of cephNamespaces, else the ClusterRoleBinding.
func namespacedBinding(crb *unstructured.Unstructured) (string, error) {
	rb := crb.DeepCopy()
	rb.SetKind("RoleBinding")
	rb.SetName(crb.GetName() + "-ceph") // as components/ceph-namespace names it
	rb.SetNamespace(namespacesMark)
	cluster, err := templateObject(crb)
	if err != nil {
		return "", err
	}
	perNamespace, err := templateObject(rb)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("{{- if .Values.cephNamespaces }}\n{{- range .Values.cephNamespaces }}\n---\n%s{{- end }}\n{{- else }}\n%s{{- end }}\n", perNamespace, cluster), nil
}

// set puts v at path, where "0" steps into a list; the field must exist or
// be a leaf the object may add (priorityClassName).
func set(obj map[string]any, path []string, v string) error {
	var cur any = obj
	for i, p := range path {
		last := i == len(path)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[p] = v
				return nil
			}
			next, ok := c[p]
			if !ok {
				return fmt.Errorf("no %q", p)
			}
			cur = next
		case []any:
			if p != "0" || len(c) == 0 {
				return fmt.Errorf("index %q", p)
			}
			if last {
				c[0] = v
				return nil
			}
			cur = c[0]
		default:
			return fmt.Errorf("%q is not a map or list", p)
		}
	}
	return nil
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package manifestrules judges, without a cluster, what the shipped YAML
// encodes: which requests the API server sends to the webhooks and to the
// admission policies (evaluated by k8s.io/apiserver's own matchers and CEL
// compiler), and what each component's ServiceAccount may do (the RBAC
// objects of each install, evaluated by k8s.io/component-helpers' rule
// matching). Every shipped install is judged: both kustomize overlays, the
// README's relocated overlay, and the Helm chart in each mode. These tests
// take seconds, so hack/manifest-mutants runs them for every one-token change
// of the YAML; test/integration/manifests proves the same installs on a real API server.
package manifestrules

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/test/internal/helmchart"
	"github.com/rook-mgr/mgr-webhook/test/internal/kustomized"
)

// install is one shipped way to install, as the objects it creates.
type install struct {
	name string
	// ns is the namespace the components run in.
	ns string
	// selfSigned: the webhook rotates its own certificates.
	selfSigned bool
	// cephNamespaces are a namespaced install's Ceph namespaces; none: the
	// chart's opt-in allNamespaces.
	cephNamespaces []string
	// monitoring: the install has the monitoring objects (the
	// ServiceMonitors and the metrics reader's binding).
	monitoring bool
	objs       []*unstructured.Unstructured
	// build makes objs, on first use: a test that fails on the first
	// install (under make mutation's -failfast) builds no other.
	build func() ([]*unstructured.Unstructured, error)
}

func (in install) get(kind, name string) *unstructured.Unstructured {
	for _, o := range in.objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// serves reports whether the install serves the Ceph namespace ns.
func (in install) serves(ns string) bool {
	if len(in.cephNamespaces) == 0 {
		return ns != "kube-system" && ns != in.ns
	}
	for _, c := range in.cephNamespaces {
		if c == ns {
			return true
		}
	}
	return false
}

// installs are listed once per test binary, and each is built once, when a
// test first needs it.
var installs = sync.OnceValues(listInstalls)

func listInstalls() ([]install, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	var all []install
	// The mutation tool (cmd/manifest-mutants) judges a change of the chart
	// by the chart's installs alone, and one of manifests/ by kustomize's.
	from := os.Getenv(installsVar)
	if from != "" && from != "kustomize" && from != "chart" {
		return nil, fmt.Errorf("%s=%q: want kustomize, chart, or nothing (both)", installsVar, from)
	}
	if from != "chart" {
		fromKustomize, err := kustomizeInstalls(root)
		if err != nil {
			return nil, err
		}
		all = append(all, fromKustomize...)
	}
	if from != "kustomize" {
		charted, err := chartInstalls()
		if err != nil {
			return nil, err
		}
		all = append(all, charted...)
	}
	for i := range all {
		all[i].build = sync.OnceValues(all[i].build)
	}
	return all, nil
}

// installsVar narrows the installs to those of kustomize or of the chart.
const installsVar = "MANIFESTRULES_INSTALLS"

func kustomizeInstalls(root string) ([]install, error) {
	var all []install
	for _, mode := range []string{"self-signed", "cert-manager"} {
		dir := filepath.Join(root, "manifests", "overlays", mode)
		all = append(all, install{name: "overlays/" + mode, ns: "mgr-webhook-system", selfSigned: mode == "self-signed", cephNamespaces: rookCeph,
			build: func() ([]*unstructured.Unstructured, error) { return kustomize(dir) }})
	}
	// An overlay with the monitoring component, as the README adds it.
	all = append(all, install{name: "overlays/cert-manager+monitoring", ns: "mgr-webhook-system", monitoring: true, cephNamespaces: rookCeph,
		build: func() ([]*unstructured.Unstructured, error) {
			return kustomizeInCheckout("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../manifests/overlays/cert-manager]\ncomponents: [../manifests/components/monitoring]\n")
		}})
	// The README's overlay, which moves the install to another namespace.
	block, err := testenv.READMEKustomization("kustomize-overlay")
	if err != nil {
		return nil, err
	}
	var k struct {
		Namespace string `json:"namespace"`
	}
	if err := yaml.Unmarshal([]byte(block), &k); err != nil || k.Namespace == "" || k.Namespace == "mgr-webhook-system" {
		return nil, errors.New("the README's kustomize-overlay block sets no namespace of its own")
	}
	for _, mode := range []string{"self-signed", "cert-manager"} {
		overlay := strings.ReplaceAll(block, "overlays/cert-manager", "overlays/"+mode)
		all = append(all, install{name: "relocated/" + mode, ns: k.Namespace, selfSigned: mode == "self-signed", cephNamespaces: rookCeph,
			build: func() ([]*unstructured.Unstructured, error) { return kustomizeInCheckout(overlay) }})
	}
	// The README's overlay that serves another Ceph namespace.
	block, err = testenv.READMEKustomization("kustomize-ceph-namespace")
	if err != nil {
		return nil, err
	}
	other := regexp.MustCompile(`name: CEPH_NAMESPACE, value: ([a-z0-9-]+)`).FindStringSubmatch(block)
	if other == nil || other[1] == "rook-ceph" {
		return nil, errors.New("the README's kustomize-ceph-namespace block sets no CEPH_NAMESPACE of its own")
	}
	all = append(all, install{name: "ceph-namespace/self-signed", ns: "mgr-webhook-system", selfSigned: true, cephNamespaces: []string{other[1]},
		build: func() ([]*unstructured.Unstructured, error) { return kustomizeInCheckout(block) }})
	return all, nil
}

// rookCeph is the Ceph namespace the shipped installs serve by default.
var rookCeph = []string{"rook-ceph"}

func chartInstalls() ([]install, error) {
	var all []install
	charts := []struct {
		name, ns, values       string
		selfSigned, monitoring bool
		cephNamespaces         []string
	}{
		{"chart/self-signed", "mgr-webhook-system", "{certificates: {mode: self-signed}}", true, false, rookCeph},
		{"chart/cert-manager", "mgr-webhook-system", "{certificates: {mode: cert-manager}}", false, false, rookCeph},
		{"chart/another-namespace", "ceph-admission", "{certificates: {mode: self-signed}}", true, false, rookCeph},
		{"chart/all-namespaces", "mgr-webhook-system", "{certificates: {mode: self-signed}, cephNamespaces: [], allNamespaces: true}", true, false, nil},
		{"chart/namespaced+cert-manager+monitoring", "mgr-webhook-system", "{certificates: {mode: cert-manager}, cephNamespaces: [rook-ceph, ceph-b], serviceMonitor: {enabled: true}}", false, true, []string{"rook-ceph", "ceph-b"}},
	}
	for _, c := range charts {
		vals, err := chartutil.ReadValues([]byte(c.values))
		if err != nil {
			return nil, err
		}
		vals = helmchart.WithControlPlane(vals) // every install says where its control plane is
		all = append(all, install{name: c.name, ns: c.ns, selfSigned: c.selfSigned, monitoring: c.monitoring, cephNamespaces: c.cephNamespaces,
			build: func() ([]*unstructured.Unstructured, error) {
				manifest, err := helmchart.RenderChart(c.ns, vals)
				if err != nil {
					return nil, err
				}
				return testenv.Objects([]byte(manifest))
			}})
	}
	return all, nil
}

// kustomizeInCheckout builds a kustomization written into the checkout
// (testenv.KustomizationInCheckout).
func kustomizeInCheckout(content string) ([]*unstructured.Unstructured, error) {
	dir, err := testenv.KustomizationInCheckout(content)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	return kustomize(dir)
}

// kustomize builds dir as kubectl kustomize does, in process: a build takes
// a tenth of kubectl's start-up.
func kustomize(dir string) ([]*unstructured.Unstructured, error) {
	data, err := kustomized.Build(dir)
	if err != nil {
		return nil, err
	}
	return testenv.Objects(data)
}

// eachInstall runs f for every shipped install.
func eachInstall(t *testing.T, f func(t *testing.T, in install)) {
	t.Helper()
	all, err := installs()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range all {
		t.Run(in.name, func(t *testing.T) {
			objs, err := in.build()
			if err != nil {
				t.Fatalf("building %s: %v", in.name, err)
			}
			in.objs = objs
			f(t, in)
		})
	}
}

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
// of the YAML; test/manifests proves the same installs on a real API server.
package manifestrules

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/internal/testenv"
	"github.com/rook-mgr/mgr-webhook/test/internal/helmchart"
)

// install is one shipped way to install, as the objects it creates.
type install struct {
	name string
	// ns is the namespace the components run in.
	ns string
	// selfSigned: the webhook rotates its own certificates.
	selfSigned bool
	// cephNamespaces, when set, is a namespaced install's Ceph namespaces.
	cephNamespaces []string
	// monitoring: the install has the monitoring objects (the
	// ServiceMonitors and the metrics reader's binding).
	monitoring bool
	objs       []*unstructured.Unstructured
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

// remoteRef is how the README refers to this repository's kustomizations.
var remoteRef = regexp.MustCompile(`https://github\.com/rook-mgr/mgr-webhook//([^?\s]+)\?ref=\S+`)

// installs are built once per test binary.
var installs = sync.OnceValues(buildInstalls)

func buildInstalls() ([]install, error) {
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
		kustomized, err := buildKustomizeInstalls(root)
		if err != nil {
			return nil, err
		}
		all = append(all, kustomized...)
	}
	if from != "kustomize" {
		charted, err := buildChartInstalls()
		if err != nil {
			return nil, err
		}
		all = append(all, charted...)
	}
	return all, nil
}

// installsVar narrows the installs to those of kustomize or of the chart.
const installsVar = "MANIFESTRULES_INSTALLS"

func buildKustomizeInstalls(root string) ([]install, error) {
	var all []install
	for _, mode := range []string{"self-signed", "cert-manager"} {
		objs, err := kustomize(filepath.Join(root, "manifests", "overlays", mode))
		if err != nil {
			return nil, err
		}
		all = append(all, install{name: "overlays/" + mode, ns: "mgr-webhook-system", selfSigned: mode == "self-signed", objs: objs})
	}
	// An overlay with the monitoring component, as the README adds it.
	dir, err := testenv.KustomizationInCheckout("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../manifests/overlays/cert-manager]\ncomponents: [../manifests/components/monitoring]\n")
	if err != nil {
		return nil, err
	}
	objs, err := kustomize(dir)
	os.RemoveAll(dir)
	if err != nil {
		return nil, err
	}
	all = append(all, install{name: "overlays/cert-manager+monitoring", ns: "mgr-webhook-system", monitoring: true, objs: objs})
	// The README's overlay, which moves the install to another namespace.
	block, err := testenv.READMEBlock("kustomize-overlay")
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
		overlay := remoteRef.ReplaceAllString(strings.ReplaceAll(block, "overlays/cert-manager", "overlays/"+mode), "../$1")
		dir, err := testenv.KustomizationInCheckout(overlay)
		if err != nil {
			return nil, err
		}
		objs, err := kustomize(dir)
		os.RemoveAll(dir)
		if err != nil {
			return nil, err
		}
		all = append(all, install{name: "relocated/" + mode, ns: k.Namespace, selfSigned: mode == "self-signed", objs: objs})
	}
	return all, nil
}

func buildChartInstalls() ([]install, error) {
	var all []install
	charts := []struct {
		name, ns, values       string
		selfSigned, monitoring bool
		cephNamespaces         []string
	}{
		{"chart/self-signed", "mgr-webhook-system", "{certificates: {mode: self-signed}}", true, false, nil},
		{"chart/cert-manager", "mgr-webhook-system", "{certificates: {mode: cert-manager}}", false, false, nil},
		{"chart/another-namespace", "ceph-admission", "{certificates: {mode: self-signed}}", true, false, nil},
		{"chart/namespaced", "mgr-webhook-system", "{certificates: {mode: self-signed}, cephNamespaces: [rook-ceph]}", true, false, []string{"rook-ceph"}},
		{"chart/namespaced+cert-manager+monitoring", "mgr-webhook-system", "{certificates: {mode: cert-manager}, cephNamespaces: [rook-ceph, ceph-b], serviceMonitor: {enabled: true}}", false, true, []string{"rook-ceph", "ceph-b"}},
	}
	for _, c := range charts {
		vals, err := chartutil.ReadValues([]byte(c.values))
		if err != nil {
			return nil, err
		}
		manifest, err := helmchart.RenderChart(c.ns, vals)
		if err != nil {
			return nil, err
		}
		objs, err := parse([]byte(manifest))
		if err != nil {
			return nil, err
		}
		all = append(all, install{name: c.name, ns: c.ns, selfSigned: c.selfSigned, monitoring: c.monitoring, cephNamespaces: c.cephNamespaces, objs: objs})
	}
	return all, nil
}

// kustomize builds dir with kustomize's library, the version kubectl
// kustomize embeds (sigs.k8s.io/kustomize/api in go.mod, the one k8s.io/kubectl
// requires, with its options; test/manifests' TestKustomizeLibraryBuildsAsKubectl
// compares the two): in process, a build takes a tenth of kubectl's start-up.
func kustomize(dir string) ([]*unstructured.Unstructured, error) {
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy // kubectl kustomize's default
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	data, err := m.AsYaml()
	if err != nil {
		return nil, err
	}
	return parse(data)
}

func parse(data []byte) ([]*unstructured.Unstructured, error) {
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

// eachInstall runs f for every shipped install.
func eachInstall(t *testing.T, f func(t *testing.T, in install)) {
	t.Helper()
	all, err := installs()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range all {
		t.Run(in.name, func(t *testing.T) { f(t, in) })
	}
}

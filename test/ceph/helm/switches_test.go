// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package helm

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rook-mgr/mgr-webhook/test/internal/helmchart"
)

const installNS = "mgr-webhook-system"

// hooks renders the chart's hooks by kind/name.
func hooks(t *testing.T, vals map[string]any) map[string]*unstructured.Unstructured {
	t.Helper()
	manifest, err := helmchart.RenderChartHooks(installNS, vals)
	if err != nil {
		t.Fatal(err)
	}
	return objects(t, manifest)
}

// TestChartSwitches: each switch of the chart turns its objects, and only
// them, off: enabled (an umbrella chart's switch: nothing at all, and no
// value is then required), crds.enabled, releaseHook.enabled, and the
// monitoring component's alerts and dashboard one by one.
func TestChartSwitches(t *testing.T) {
	t.Run("enabled=false", func(t *testing.T) {
		// No networkPolicy.controlPlaneCIDRs: a disabled chart requires nothing.
		vals, err := chartutil.ReadValues([]byte("enabled: false\n"))
		if err != nil {
			t.Fatal(err)
		}
		if objs := documents(t, template(t, installNS, vals)); len(objs) != 0 {
			t.Errorf("enabled=false rendered %d objects", len(objs))
		}
		if h := hooks(t, vals); len(h) != 0 {
			t.Errorf("enabled=false rendered hooks %v", slices.Sorted(maps.Keys(h)))
		}
		notes, err := helmchart.RenderChartNotes(installNS, vals)
		if err != nil || !strings.Contains(notes, "nothing was installed") {
			t.Errorf("NOTES of a disabled chart: %q, %v", notes, err)
		}
	})

	on := objects(t, template(t, installNS, values(t, "serviceMonitor: {enabled: true}\n")))
	onHooks := hooks(t, values(t, ""))
	for _, key := range []string{"CustomResourceDefinition/mgrpolicies.mgr.ceph.rook.io", "CustomResourceDefinition/cephreleases.mgr.ceph.rook.io", "PrometheusRule/mgr-webhook", "ConfigMap/mgr-webhook-dashboard", "ServiceMonitor/mgr-webhook"} {
		if on[key] == nil {
			t.Errorf("%s is not rendered by default (with serviceMonitor.enabled)", key)
		}
	}
	if onHooks["Job/mgr-bootstrap-release"] == nil {
		t.Fatalf("the release hook is not rendered by default: %v", slices.Sorted(maps.Keys(onHooks)))
	}

	for _, tc := range []struct {
		name, values string
		off          []string // rendered by default, not with the switch
		hooksOff     bool
	}{
		{"crds.enabled=false", "serviceMonitor: {enabled: true}\ncrds: {enabled: false}\n",
			[]string{"CustomResourceDefinition/mgrpolicies.mgr.ceph.rook.io", "CustomResourceDefinition/cephreleases.mgr.ceph.rook.io"}, false},
		{"prometheusRule.enabled=false", "serviceMonitor: {enabled: true, prometheusRule: {enabled: false}}\n", []string{"PrometheusRule/mgr-webhook"}, false},
		{"dashboard.enabled=false", "serviceMonitor: {enabled: true, dashboard: {enabled: false}}\n", []string{"ConfigMap/mgr-webhook-dashboard"}, false},
		{"releaseHook.enabled=false", "serviceMonitor: {enabled: true}\nreleaseHook: {enabled: false}\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := values(t, tc.values)
			got := objects(t, template(t, installNS, vals))
			for key := range on {
				if _, rendered := got[key]; rendered == slices.Contains(tc.off, key) {
					t.Errorf("%s: rendered %v, want %v", key, rendered, !slices.Contains(tc.off, key))
				}
			}
			h := hooks(t, vals)
			if tc.hooksOff != (len(h) == 0) {
				t.Errorf("hooks %v with %s", slices.Sorted(maps.Keys(h)), tc.values)
			}
			if tc.hooksOff {
				notes, err := helmchart.RenderChartNotes(installNS, vals)
				if err != nil || !strings.Contains(notes, "kubectl mgr release") {
					t.Errorf("NOTES without the release hook do not say to run kubectl mgr release: %q, %v", notes, err)
				}
			}
		})
	}
}

// podSpec is a Deployment's or Job's pod spec.
func podSpec(t *testing.T, o *unstructured.Unstructured) corev1.PodSpec {
	t.Helper()
	if o == nil {
		t.Fatal("object not rendered")
	}
	m, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
	var spec corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &spec); err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestChartGlobalValues: what umbrella charts set under global is honoured:
// global.imagePullSecrets beside the chart's own, global.image.registry where
// image.registry is empty, global.nodeSelector under each component's (which
// wins key by key), in both Deployments and the release hook's Job.
func TestChartGlobalValues(t *testing.T) {
	vals := values(t, `
global:
  imagePullSecrets: [{name: umbrella}]
  image: {registry: mirror.example.com}
  nodeSelector: {zone: a, disk: ssd}
  someOtherChartsKey: ignored
imagePullSecrets: [{name: own}]
webhook: {nodeSelector: {zone: b}}
`)
	objs := objects(t, template(t, installNS, vals))
	h := hooks(t, vals)
	for key, want := range map[string]map[string]string{
		"Deployment/mgr-webhook":   {"zone": "b", "disk": "ssd"},
		"Deployment/mgr-bootstrap": {"zone": "a", "disk": "ssd"},
	} {
		spec := podSpec(t, objs[key])
		if !reflect.DeepEqual(spec.NodeSelector, want) {
			t.Errorf("%s nodeSelector %v, want %v", key, spec.NodeSelector, want)
		}
		if got := spec.ImagePullSecrets; len(got) != 2 || got[0].Name != "own" || got[1].Name != "umbrella" {
			t.Errorf("%s imagePullSecrets %v, want own and umbrella", key, got)
		}
		if img := spec.Containers[0].Image; !strings.HasPrefix(img, "mirror.example.com/rook-mgr/") {
			t.Errorf("%s image %s, not from global.image.registry", key, img)
		}
	}
	job := podSpec(t, h["Job/mgr-bootstrap-release"])
	if !reflect.DeepEqual(job.NodeSelector, map[string]string{"zone": "a", "disk": "ssd"}) || len(job.ImagePullSecrets) != 2 {
		t.Errorf("the release hook's Job: nodeSelector %v, imagePullSecrets %v", job.NodeSelector, job.ImagePullSecrets)
	}

	// The chart's own image.registry wins over global's; no global at all
	// changes nothing.
	own := objects(t, template(t, installNS, values(t, "global: {image: {registry: mirror.example.com}}\nimage: {registry: own.example.com}\n")))
	if img := podSpec(t, own["Deployment/mgr-webhook"]).Containers[0].Image; !strings.HasPrefix(img, "own.example.com/rook-mgr/") {
		t.Errorf("image %s: image.registry does not win over global.image.registry", img)
	}
	plain := objects(t, template(t, installNS, values(t, "global: null\n")))
	if spec := podSpec(t, plain["Deployment/mgr-webhook"]); len(spec.ImagePullSecrets) != 0 || !strings.HasPrefix(spec.Containers[0].Image, "ghcr.io/rook-mgr/") {
		t.Errorf("global: null: imagePullSecrets %v, image %s", spec.ImagePullSecrets, spec.Containers[0].Image)
	}
}

// TestChartInstanceLabel: every object the chart renders, hooks included,
// and every pod it runs carries app.kubernetes.io/instance of its release,
// so that two releases' objects are told apart; no selector does (selectors
// are immutable: one naming the release would break the upgrade of every
// install made without it).
func TestChartInstanceLabel(t *testing.T) {
	const release = "mgr-webhook" // helmchart renders the release so named
	vals := values(t, "serviceMonitor: {enabled: true}\n")
	manifest := template(t, installNS, vals)
	hookManifest, err := helmchart.RenderChartHooks(installNS, vals)
	if err != nil {
		t.Fatal(err)
	}
	objs := append(documents(t, manifest), documents(t, hookManifest)...)
	pods := 0
	for _, o := range objs {
		key := o.GetKind() + "/" + o.GetName()
		if got := o.GetLabels()["app.kubernetes.io/instance"]; got != release {
			t.Errorf("%s: app.kubernetes.io/instance %q, want %q", key, got, release)
		}
		if labels, found, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels"); found {
			pods++
			if labels["app.kubernetes.io/instance"] != release {
				t.Errorf("%s's pods lack app.kubernetes.io/instance: %v", key, labels)
			}
		}
		if sel, found, _ := unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels"); found {
			if _, has := sel["app.kubernetes.io/instance"]; has {
				t.Errorf("%s selects by app.kubernetes.io/instance: an upgrade from an install without it would fail", key)
			}
		}
	}
	if pods < 3 {
		t.Errorf("%d pod templates rendered; want both Deployments and the release hook's Job", pods)
	}
}

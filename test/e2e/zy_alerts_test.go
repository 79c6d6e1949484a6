// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/internal/testenv"
)

// TestAlertsUseExportedMetrics: after the suite has admitted, denied and
// bootstrapped mgrs, every metric the shipped alerts query (but Prometheus's
// own up) is one the components export, so no alert silently watches a
// misspelled or renamed series. It runs on the local cluster, whose metrics
// the suite can scrape; the names are the same on any cluster.
func TestAlertsUseExportedMetrics(t *testing.T) {
	if len(env.MetricsURLs) == 0 {
		t.Log("another cluster: its metrics endpoints are not reachable from here; the local run checks the names")
		return
	}
	exported := map[string]bool{}
	for name, url := range env.MetricsURLs {
		mfs, err := testenv.Scrape(url)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for n := range mfs {
			exported[n] = true
		}
	}
	data, err := os.ReadFile(filepath.Join(env.root, "manifests", "components", "monitoring", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &pr); err != nil {
		t.Fatal(err)
	}
	groups, err := yaml.Marshal(pr.Spec)
	if err != nil {
		t.Fatal(err)
	}
	p := parser.NewParser(parser.Options{})
	rgs, errs := rulefmt.Parse(groups, false, model.UTF8Validation, p, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, g := range rgs.Groups {
		for _, r := range g.Rules {
			expr, err := p.ParseExpr(r.Expr)
			if err != nil {
				t.Fatal(err)
			}
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok && vs.Name != "up" && !exported[vs.Name] {
					t.Errorf("alert %s queries %s, which neither component exports (have %v)", r.Alert, vs.Name, slices.Sorted(maps.Keys(exported)))
				}
				return nil
			})
		}
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/test/internal/alertrules"
)

// TestAlertsUseExportedMetrics: after the suite has admitted, denied and
// bootstrapped mgrs, every metric the shipped alerts and the Grafana
// dashboard query (but Prometheus's own up) is one the components export, so no alert silently watches a
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
	rules, err := alertrules.Load(env.root)
	if err != nil {
		t.Fatal(err)
	}
	queries := map[string]string{}
	for name, r := range rules {
		queries["alert "+name] = r.Expr
	}
	// The Grafana dashboard's panels too.
	data, err := os.ReadFile(filepath.Join(env.root, "manifests", "components", "monitoring", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Title   string                  `json:"title"`
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dashboard); err != nil {
		t.Fatal(err)
	}
	for _, p := range dashboard.Panels {
		for i, q := range p.Targets {
			queries[fmt.Sprintf("dashboard panel %q query %d", p.Title, i)] = q.Expr
		}
	}
	for what, expr := range queries {
		metrics, err := alertrules.Metrics(expr)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metrics {
			// A histogram's series are its family's.
			family := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
			if m != "up" && !exported[m] && !exported[family] {
				t.Errorf("%s queries %s, which neither component exports (have %v)", what, m, slices.Sorted(maps.Keys(exported)))
			}
		}
	}
}

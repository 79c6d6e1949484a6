// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"maps"
	"slices"
	"testing"

	"github.com/rook-mgr/mgr-webhook/internal/alertrules"
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
	rules, err := alertrules.Load(env.root)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range rules {
		metrics, err := alertrules.Metrics(r.Expr)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metrics {
			if m != "up" && !exported[m] {
				t.Errorf("alert %s queries %s, which neither component exports (have %v)", name, m, slices.Sorted(maps.Keys(exported)))
			}
		}
	}
}

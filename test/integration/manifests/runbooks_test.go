// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/test/internal/alertrules"
)

// runbookBase is where every alert's runbook_url points.
const runbookBase = "https://github.com/rook-mgr/mgr-webhook/blob/main/docs/runbooks.md#"

// TestEveryAlertHasARunbook: each shipped alert's runbook_url is a section of
// docs/runbooks.md (GitHub's anchor of its "## <alert>" heading), and each
// section there is an alert's.
func TestEveryAlertHasARunbook(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	rules, err := alertrules.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	var sections []string
	for _, m := range regexp.MustCompile(`(?m)^## (\S+)$`).FindAllStringSubmatch(string(data), -1) {
		sections = append(sections, m[1])
	}
	for name, r := range rules {
		if want := runbookBase + strings.ToLower(name); r.Annotations["runbook_url"] != want {
			t.Errorf("alert %s: runbook_url %q, want %q", name, r.Annotations["runbook_url"], want)
		}
		if !slices.Contains(sections, name) {
			t.Errorf("alert %s has no section \"## %s\" in docs/runbooks.md", name, name)
		}
	}
	for _, s := range sections {
		if _, ok := rules[s]; !ok {
			t.Errorf("docs/runbooks.md has a section for %s, which is no alert", s)
		}
	}
}

// Dashboard is the shipped Grafana dashboard's panels and their queries.
type Dashboard struct {
	UID    string `json:"uid"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
}

// TestDashboardParses: the Grafana dashboard is JSON Grafana takes (a uid,
// a datasource variable), every panel has a query, and every query is
// PromQL that selects only this project's metrics, controller-runtime's
// webhook metrics and up (test/e2e checks they are all exported).
func TestDashboardParses(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "manifests", "components", "monitoring", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d Dashboard
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	if d.UID == "" || len(d.Panels) < 10 || !slices.ContainsFunc(d.Templating.List, func(v struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}) bool {
		return v.Name == "datasource" && v.Type == "datasource"
	}) {
		t.Fatalf("dashboard: uid %q, %d panels, variables %v; want a uid, ten panels or more and a datasource variable", d.UID, len(d.Panels), d.Templating.List)
	}
	ours := regexp.MustCompile(`^(mgr_(webhook|bootstrap|policy)_[a-z_]+|controller_runtime_webhook_[a-z_]+|up)$`)
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			metrics, err := alertrules.Metrics(q.Expr)
			if err != nil {
				t.Errorf("panel %q: %v", p.Title, err)
			}
			for _, m := range metrics {
				if !ours.MatchString(m) {
					t.Errorf("panel %q queries %s, which is not one of the components' metrics", p.Title, m)
				}
			}
		}
	}
}

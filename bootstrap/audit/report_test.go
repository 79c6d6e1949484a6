// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package audit

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rook-mgr/mgr-webhook/mutate"
)

// TestReportFor: one Report per namespace whatever its mgrs; failures first,
// capped at the limit while the summary counts every result; the action of
// a rule decides fail or warn; the same findings hash alike.
func TestReportFor(t *testing.T) {
	p := mutate.DefaultPolicy()
	p.Enforcement = map[mutate.Rule]mutate.Action{mutate.RuleAllowLatest: mutate.ActionWarn}
	mgr := func(i int) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: fmt.Sprintf("rook-ceph-mgr-%02d", i)}}
	}
	old := field.Invalid(field.NewPath("spec"), "v15", "old").WithOrigin(string(mutate.RuleMinimumCephVersion))
	latest := field.Invalid(field.NewPath("spec"), "latest", "latest").WithOrigin(string(mutate.RuleAllowLatest))
	var mgrs []audited
	for i := range 10 {
		mgrs = append(mgrs, audited{d: mgr(i)})
	}
	mgrs[7].f.Violations = field.ErrorList{old}
	mgrs[8].f.Violations = field.ErrorList{latest}
	mgrs[9].f.Drift = mutate.SectionContainers
	rep, hash := reportFor("rook-ceph", mgrs, nil, p, "h", 4)
	if rep.Summary.Pass != 7 || rep.Summary.Fail != 1 || rep.Summary.Warn != 2 {
		t.Fatalf("summary %+v, want 7 pass, 1 fail, 2 warn", rep.Summary)
	}
	var got []string
	for _, r := range rep.Results {
		got = append(got, fmt.Sprintf("%s:%s:%s", r.Subjects[0].Name, r.Rule, r.Result))
	}
	want := []string{"rook-ceph-mgr-07:images.minimumCephVersion:fail", "rook-ceph-mgr-08:images.allowLatest:warn", "rook-ceph-mgr-09:completion:warn", "rook-ceph-mgr-00:policy:pass"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("results %v, want %v", got, want)
	}
	if rep.Namespace != "rook-ceph" || rep.Name != ReportName || rep.Configuration.Limits.MaxResults != 4 {
		t.Errorf("report %s/%s, limit %d", rep.Namespace, rep.Name, rep.Configuration.Limits.MaxResults)
	}
	if _, again := reportFor("rook-ceph", mgrs, nil, p, "h", 4); again != hash {
		t.Error("the same findings hash differently")
	}
	mgrs[7].f.Violations = nil
	if _, changed := reportFor("rook-ceph", mgrs, nil, p, "h", 4); changed == hash {
		t.Error("a mgr that complies again does not change the report")
	}
	for i, want := range map[int]string{7: "pass", 8: "warn", 9: "warn"} {
		if got, _ := mgrs[i].verdict(p); string(got) != want {
			t.Errorf("mgr %d: verdict %s, want %s", i, got, want)
		}
	}
}

// TestVerdictWorstWins: a mgr with a Deny and a Warn violation fails,
// whichever is found first; drift alone warns, and never lowers a failure.
func TestVerdictWorstWins(t *testing.T) {
	p := mutate.DefaultPolicy()
	p.Enforcement = map[mutate.Rule]mutate.Action{mutate.RuleAllowLatest: mutate.ActionWarn}
	deny := field.Invalid(field.NewPath("spec"), "v15", "old").WithOrigin(string(mutate.RuleMinimumCephVersion))
	warn := field.Invalid(field.NewPath("spec"), "latest", "latest").WithOrigin(string(mutate.RuleAllowLatest))
	for name, tc := range map[string]struct {
		violations field.ErrorList
		drift      mutate.Section
		want       string
	}{
		"warn, then deny":        {field.ErrorList{warn, deny}, 0, "fail"},
		"deny, then warn":        {field.ErrorList{deny, warn}, 0, "fail"},
		"two warns":              {field.ErrorList{warn, warn}, 0, "warn"},
		"deny and drift":         {field.ErrorList{deny}, mutate.SectionContainers, "fail"},
		"drift alone":            {nil, mutate.SectionContainers, "warn"},
		"nothing":                {nil, 0, "pass"},
		"warn, deny, then warn":  {field.ErrorList{warn, deny, warn}, 0, "fail"},
		"deny, warn and drifted": {field.ErrorList{deny, warn}, mutate.SectionStrategy, "fail"},
	} {
		t.Run(name, func(t *testing.T) {
			a := audited{d: &appsv1.Deployment{}}
			a.f.Violations, a.f.Drift = tc.violations, tc.drift
			if got, why := a.verdict(p); string(got) != tc.want {
				t.Errorf("verdict %s (%s), want %s", got, why, tc.want)
			}
		})
	}
}

// TestReportForModuleOptions: a module option Ceph holds otherwise is a warn
// result about the namespace's cluster (its CephRelease), naming the
// option, Ceph's value and the policy's; a changed value changes the hash.
func TestReportForModuleOptions(t *testing.T) {
	p := mutate.DefaultPolicy()
	drift := []OptionDrift{{Name: "mgr/balancer/mode", Want: "upmap", Have: "crush-compat"}, {Name: "mgr/prometheus/scrape_interval", Want: "20"}}
	rep, hash := reportFor("rook-ceph", nil, drift, p, "h", 10)
	if rep.Summary.Warn != 2 || len(rep.Results) != 2 {
		t.Fatalf("summary %+v, %d results; want 2 warn", rep.Summary, len(rep.Results))
	}
	for i, want := range []string{"mgr/balancer/mode is crush-compat on section mgr, the policy says upmap", "mgr/prometheus/scrape_interval is not set on section mgr, the policy says 20"} {
		r := rep.Results[i]
		if r.Rule != RuleModuleOptions || r.Result != "warn" || r.Subjects[0].Kind != "CephRelease" || r.Subjects[0].Name != "rook-ceph" || !strings.Contains(r.Description, want) {
			t.Errorf("result %d: %s %s about %+v: %q; want a warn about CephRelease rook-ceph saying %q", i, r.Rule, r.Result, r.Subjects[0], r.Description, want)
		}
	}
	drift[0].Have = "none"
	if _, changed := reportFor("rook-ceph", nil, drift, p, "h", 10); changed == hash {
		t.Error("another value in Ceph does not change the report")
	}
}

// TestShownValue: the value of an option that may hold a credential is
// never shown; others are, as Ceph or the policy has them.
func TestShownValue(t *testing.T) {
	for name, want := range map[string]string{
		"mgr/influx/password": "<redacted>", "mgr/dashboard/GRAFANA_API_PASSWORD": "<redacted>", "mgr/telegraf/api_key": "<redacted>",
		"mgr/zabbix/secret_token": "<redacted>", "mgr/prometheus/scrape_interval": "hunter2", "mgr/balancer/mode": "hunter2",
	} {
		if got := ShownValue(name, "hunter2"); got != want {
			t.Errorf("ShownValue(%s) = %q, want %q", name, got, want)
		}
	}
	drift := []OptionDrift{{Name: "mgr/influx/password", Want: "hunter2", Have: "letmein"}}
	rep, _ := reportFor("rook-ceph", nil, drift, mutate.DefaultPolicy(), "h", 10)
	if d := rep.Results[0].Description; strings.Contains(d, "hunter2") || strings.Contains(d, "letmein") {
		t.Errorf("the Report shows a password: %q", d)
	}
}

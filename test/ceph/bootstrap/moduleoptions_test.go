// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	orv1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/bootstrap/audit"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
)

// TestModuleOptions: the policy's moduleOptions are in Ceph's configuration
// database on section mgr before the module they belong to is enabled (the
// mons' audit log orders the two), a mgr reconciled again with the options
// in force reads nothing more, a changed value is set, and an option the
// policy drops is removed only where the controller had set it.
func TestModuleOptions(t *testing.T) {
	ctx := t.Context()
	const ns = nsOptions
	c := clusterOf(t, ns, cephtest.Options{})
	// option is section mgr's value of name in the configuration database
	// ("" when not set there: `config get` would answer the default).
	option := func(name string) string {
		t.Helper()
		out, err := c.Ceph(ctx, "config", "dump")
		if err != nil {
			t.Fatalf("ceph config dump: %v", err)
		}
		var entries []struct{ Section, Name, Value string }
		if err := json.Unmarshal(out, &entries); err != nil {
			t.Fatalf("ceph config dump: %v", err)
		}
		for _, e := range entries {
			if e.Section == "mgr" && e.Name == name {
				return e.Value
			}
		}
		return ""
	}
	// An option an administrator set, to the value the policy will name.
	if _, err := c.Ceph(ctx, "config", "set", "mgr", "mgr/balancer/upmap_max_deviation", "3"); err != nil {
		t.Fatal(err)
	}
	setPolicy := func(opts map[string]v1alpha1.ModuleOptionValues) {
		t.Helper()
		updateMgrPolicy(t, ns, func(s *v1alpha1.PolicySpec) { s.ModuleOptions = opts })
	}
	setPolicy(map[string]v1alpha1.ModuleOptionValues{
		"prometheus": {"scrape_interval": "20"},
		"balancer":   {"mode": "crush-compat", "upmap_max_deviation": "3"},
	})
	// Whatever happens, the suite's other tests run with none (the
	// controller keeps the last good policy, without options).
	defer removeMgrPolicy(t)
	defer setPolicy(nil)

	d := mgrDeployment(t, ns, "a", 1, map[string]string{contract.AnnotationModules: "prometheus"})
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = k8s.Delete(context.Background(), d)
		eventually(t, time.Minute, "mgr a's Deployment gone", func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(get(ctx, ns, d.Name, d)), nil
		})
	}()
	set := waitEvent(t, ns, d.Name, bootstrap.ReasonModuleOptionsSet, 2*time.Minute)
	if !strings.Contains(set, "mgr/prometheus/scrape_interval=20") || !strings.Contains(set, "mgr/balancer/mode=crush-compat") || strings.Contains(set, "upmap_max_deviation") {
		t.Errorf("Event %q: want the two options set, not the one already as the policy says", set)
	}
	waitEvent(t, ns, d.Name, bootstrap.ReasonModulesEnabled, 2*time.Minute)
	for name, want := range map[string]string{"mgr/prometheus/scrape_interval": "20", "mgr/balancer/mode": "crush-compat", "mgr/balancer/upmap_max_deviation": "3"} {
		if got := option(name); got != want {
			t.Errorf("ceph config get mgr %s = %q, want %q", name, got, want)
		}
	}
	// In force before the enable: the configuration database's change log
	// and the mons' audit log, on the mon's clock.
	configLog, err := c.Ceph(ctx, "config", "log")
	if err != nil {
		t.Fatal(err)
	}
	var changes []struct {
		Timestamp string
		Changes   []struct{ Name string }
	}
	if err := json.Unmarshal(configLog, &changes); err != nil {
		t.Fatalf("ceph config log: %v\n%.2000s", err, configLog)
	}
	var setAt, enabledAt time.Time
	for _, ch := range changes {
		for _, o := range ch.Changes {
			if o.Name == "mgr/mgr/prometheus/scrape_interval" { // <section>/<option>
				setAt = monTime(t, ch.Timestamp)
			}
		}
	}
	out, err := c.Ceph(ctx, "log", "last", "10000", "info", "audit")
	if err != nil {
		t.Fatal(err)
	}
	var entries []struct{ Stamp, Message string }
	if err := json.Unmarshal(out, &entries); err != nil {
		t.Fatalf("ceph log last: %v\n%.2000s", err, out)
	}
	for _, e := range entries {
		if m := strings.ReplaceAll(e.Message, " ", ""); enabledAt.IsZero() && strings.Contains(m, `"prefix":"mgrmoduleenable","module":"prometheus"`) {
			enabledAt = monTime(t, e.Stamp)
		}
	}
	if setAt.IsZero() || enabledAt.IsZero() || !setAt.Before(enabledAt) {
		t.Errorf("scrape_interval set at %v, prometheus enabled at %v: want both, the option first; config log: %.3000s", setAt, enabledAt, strings.ReplaceAll(string(configLog), "\n", " "))
	}
	record, err := c.Ceph(ctx, "config-key", "get", contract.ModuleOptionsRecordKey)
	if err != nil || strings.TrimSpace(string(record)) != "mgr/balancer/mode,mgr/prometheus/scrape_interval" {
		t.Errorf("the controller's record %q (%v): want the two options it set", record, err)
	}

	// Reconciled again with the options in force: nothing written (the
	// configuration database's version stays).
	version := func() int {
		t.Helper()
		out, err := c.Ceph(ctx, "config", "log", "1")
		var last []struct{ Version int }
		if err == nil {
			err = json.Unmarshal(out, &last)
		}
		if err != nil || len(last) != 1 {
			t.Fatalf("ceph config log 1: %v, %s", err, out)
		}
		return last[0].Version
	}
	before := version()
	if err := get(ctx, ns, d.Name, d); err != nil {
		t.Fatal(err)
	}
	if d.Spec.Template.Annotations == nil {
		d.Spec.Template.Annotations = map[string]string{}
	}
	d.Spec.Template.Annotations["touched"] = "1"
	if err := k8s.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "Ready at the new generation, the options recorded", func(ctx context.Context) (bool, error) {
		if err := get(ctx, ns, d.Name, d); err != nil {
			return false, err
		}
		st := status(t, ns, d.Name)
		return st.Phase == mgrstatus.PhaseReady && st.ObservedGeneration == d.Generation && st.ModuleOptions != "", fmt.Errorf("status %+v at generation %d", st, d.Generation)
	})
	if after := version(); after != before {
		t.Errorf("the configuration database went from version %d to %d when a mgr whose options are in force was reconciled again; want no write", before, after)
	}

	// A changed value is set; a dropped option is removed where ours only.
	setPolicy(map[string]v1alpha1.ModuleOptionValues{"prometheus": {"scrape_interval": "30"}})
	eventually(t, 2*time.Minute, "scrape_interval 30, balancer mode removed", func(ctx context.Context) (bool, error) {
		return option("mgr/prometheus/scrape_interval") == "30" && option("mgr/balancer/mode") == "", nil
	})
	if got := option("mgr/balancer/upmap_max_deviation"); got != "3" {
		t.Errorf("the administrator's upmap_max_deviation is %q after the policy dropped it; want 3 kept (not the controller's)", got)
	}

	// A hand edit: reported (an Event, the namespace's Report), left as it
	// is; set back once the policy says restoreModuleOptions.
	if _, err := c.Ceph(ctx, "config", "set", "mgr", "mgr/prometheus/scrape_interval", "45"); err != nil {
		t.Fatal(err)
	}
	drifted := waitEvent(t, ns, d.Name, bootstrap.ReasonModuleOptionsDrifted, 2*time.Minute)
	if !strings.Contains(drifted, `mgr/prometheus/scrape_interval is "45`) || !strings.Contains(drifted, `the policy says "30"`) { // Ceph may say 45.000000
		t.Errorf("drift Event %q does not name the option and both values", drifted)
	}
	eventually(t, time.Minute, "the namespace's Report naming the drifted option", func(ctx context.Context) (bool, error) {
		rep, err := reportOf(ctx, ns)
		if err != nil {
			return false, err
		}
		for _, r := range rep.Results {
			if r.Rule == audit.RuleModuleOptions && r.Result == "warn" && strings.Contains(r.Description, "mgr/prometheus/scrape_interval is 45") && strings.Contains(r.Description, "the policy says 30") {
				return true, nil
			}
		}
		return false, fmt.Errorf("results %+v", rep.Results)
	})
	if got := option("mgr/prometheus/scrape_interval"); !strings.HasPrefix(got, "45") {
		t.Errorf("the hand edit became %q without restoreModuleOptions; want 45 left", got)
	}
	restore := func(on bool) {
		t.Helper()
		updateMgrPolicy(t, ns, func(s *v1alpha1.PolicySpec) { s.RestoreModuleOptions = on })
	}
	restore(true)
	eventually(t, 2*time.Minute, "scrape_interval set back to 30", func(ctx context.Context) (bool, error) {
		return option("mgr/prometheus/scrape_interval") == "30", nil
	})
	if note := waitEvent(t, ns, d.Name, bootstrap.ReasonModuleOptionsRestored, time.Minute); !strings.Contains(note, `mgr/prometheus/scrape_interval=30 (was "45`) {
		t.Errorf("restore Event %q does not name the option and both values", note)
	}
	eventually(t, time.Minute, "the Report without the drift", func(ctx context.Context) (bool, error) {
		rep, err := reportOf(ctx, ns)
		if err != nil {
			return false, err
		}
		return !slices.ContainsFunc(rep.Results, func(r orv1alpha1.ReportResult) bool { return r.Rule == audit.RuleModuleOptions }), nil
	})
	restore(false)

	// Back to none: the controller removes what it set, and only that.
	setPolicy(nil)
	eventually(t, 2*time.Minute, "scrape_interval removed", func(ctx context.Context) (bool, error) {
		out, err := c.Ceph(ctx, "config", "dump")
		return err == nil && !strings.Contains(string(out), "mgr/prometheus/scrape_interval"), err
	})
	if got := option("mgr/balancer/upmap_max_deviation"); got != "3" {
		t.Errorf("the administrator's upmap_max_deviation is %q with no moduleOptions; want 3 kept", got)
	}
}

// monTime reads a timestamp as the mons write them.
func monTime(t *testing.T, s string) time.Time {
	t.Helper()
	for _, layout := range []string{"2006-01-02T15:04:05.999999-0700", "2006-01-02T15:04:05.999999Z07:00", "2006-01-02 15:04:05.999999"} {
		if v, err := time.Parse(layout, s); err == nil {
			return v
		}
	}
	t.Fatalf("cannot read the mon's time %q", s)
	return time.Time{}
}

// reportOf is namespace ns's audit Report (the audit writes it unstructured).
func reportOf(ctx context.Context, ns string) (*orv1alpha1.Report, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(orv1alpha1.SchemeGroupVersion.String())
	u.SetKind("Report")
	if err := get(ctx, ns, audit.ReportName, u); err != nil {
		return nil, err
	}
	rep := &orv1alpha1.Report{}
	return rep, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, rep)
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"slices"
	"strings"
	"testing"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/bootstrap/audit"
	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
)

func TestPlanModuleOptions(t *testing.T) {
	tentacle := ceph.Version{Major: 20, Minor: 2, Patch: 4}
	want := map[string]v1alpha1.ModuleOptionValues{
		"prometheus": {"scrape_interval": "20"},
		"balancer":   {"mode": "upmap"},
	}
	for name, tc := range map[string]struct {
		want  map[string]v1alpha1.ModuleOptionValues
		have  map[string]string
		ours  []string
		calls []string // each call's words
		owned []string
	}{
		"none wanted, none set: nothing": {},
		"a fresh cluster: both set, with --force, claimed": {want: want,
			calls: []string{"config set mgr mgr/balancer/mode upmap --force", "config set mgr mgr/prometheus/scrape_interval 20 --force"},
			owned: []string{"mgr/balancer/mode", "mgr/prometheus/scrape_interval"}},
		"in force already: nothing, and nothing claimed": {want: want,
			have: map[string]string{"mgr/balancer/mode": "upmap", "mgr/prometheus/scrape_interval": "20"}},
		"ours, in force: kept in the record": {want: want,
			have: map[string]string{"mgr/balancer/mode": "upmap", "mgr/prometheus/scrape_interval": "20"}, ours: []string{"mgr/balancer/mode"},
			owned: []string{"mgr/balancer/mode"}},
		"changed by hand: set back, only that one": {want: want,
			have: map[string]string{"mgr/balancer/mode": "crush-compat", "mgr/prometheus/scrape_interval": "20"}, ours: []string{"mgr/balancer/mode", "mgr/prometheus/scrape_interval"},
			calls: []string{"config set mgr mgr/balancer/mode upmap --force"},
			owned: []string{"mgr/balancer/mode", "mgr/prometheus/scrape_interval"}},
		"dropped by the policy, ours: removed": {want: map[string]v1alpha1.ModuleOptionValues{"balancer": {"mode": "upmap"}},
			have: map[string]string{"mgr/balancer/mode": "upmap", "mgr/prometheus/scrape_interval": "20"}, ours: []string{"mgr/balancer/mode", "mgr/prometheus/scrape_interval"},
			calls: []string{"config rm mgr mgr/prometheus/scrape_interval"},
			owned: []string{"mgr/balancer/mode"}},
		"dropped by the policy, not ours: left": {want: map[string]v1alpha1.ModuleOptionValues{},
			have: map[string]string{"mgr/prometheus/scrape_interval": "20"}},
		"dropped, ours, already gone: nothing to remove": {ours: []string{"mgr/prometheus/scrape_interval"}},
		"Ceph's own form of the same value: nothing": {want: want,
			have: map[string]string{"mgr/balancer/mode": "upmap", "mgr/prometheus/scrape_interval": "20.000000"}},
		"other sections' options are not read here": {want: want,
			have:  map[string]string{"mgr/dashboard/ssl": "false"},
			calls: []string{"config set mgr mgr/balancer/mode upmap --force", "config set mgr mgr/prometheus/scrape_interval 20 --force"},
			owned: []string{"mgr/balancer/mode", "mgr/prometheus/scrape_interval"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := planModuleOptions(tentacle, tc.want, tc.have, tc.ours)
			var calls []string
			for _, c := range p.Calls {
				if c.Cmd.Kind != ceph.Write {
					t.Errorf("%v is not a write", c.Cmd.Args)
				}
				calls = append(calls, strings.Join(c.Cmd.Args, " "))
			}
			if !slices.Equal(calls, tc.calls) {
				t.Errorf("calls %q, want %q", calls, tc.calls)
			}
			if !slices.Equal(p.Ours, tc.owned) {
				t.Errorf("record %q, want %q", p.Ours, tc.owned)
			}
		})
	}
	// Before Nautilus there is no --force.
	p := planModuleOptions(ceph.Version{Major: 13, Minor: 2, Patch: 3}, map[string]v1alpha1.ModuleOptionValues{"balancer": {"mode": "upmap"}}, nil, nil)
	if got := strings.Join(p.Calls[0].Cmd.Args, " "); got != "config set mgr mgr/balancer/mode upmap" {
		t.Errorf("Mimic: %q", got)
	}
}

func TestModuleOptionsHash(t *testing.T) {
	if h := moduleOptionsHash(nil); h != "" {
		t.Errorf("no options hash to %q, want \"\" (no status change, no read)", h)
	}
	a := moduleOptionsHash(map[string]v1alpha1.ModuleOptionValues{"balancer": {"mode": "upmap"}, "prometheus": {"scrape_interval": "20"}})
	b := moduleOptionsHash(map[string]v1alpha1.ModuleOptionValues{"prometheus": {"scrape_interval": "20"}, "balancer": {"mode": "upmap"}})
	c := moduleOptionsHash(map[string]v1alpha1.ModuleOptionValues{"balancer": {"mode": "upmap"}, "prometheus": {"scrape_interval": "21"}})
	if a == "" || a != b || a == c {
		t.Errorf("hashes %q %q %q: want equal for equal options, different for a changed value", a, b, c)
	}
}

func TestModuleOptionDrift(t *testing.T) {
	want := map[string]v1alpha1.ModuleOptionValues{"prometheus": {"scrape_interval": "20"}, "balancer": {"mode": "upmap"}}
	got := moduleOptionDrift(want, map[string]string{"mgr/balancer/mode": "crush-compat", "mgr/dashboard/ssl": "false"})
	wantDrift := []audit.OptionDrift{{Name: "mgr/balancer/mode", Want: "upmap", Have: "crush-compat"}, {Name: "mgr/prometheus/scrape_interval", Want: "20", Have: ""}}
	if !slices.Equal(got, wantDrift) {
		t.Errorf("drift %+v, want %+v", got, wantDrift)
	}
	if got := moduleOptionDrift(want, map[string]string{"mgr/balancer/mode": "upmap", "mgr/prometheus/scrape_interval": "20.000000"}); len(got) != 0 {
		t.Errorf("options as the policy says: drift %+v", got)
	}
	// The watch tells a change of drift once.
	w := &optionWatch{}
	if !w.keep("a", wantDrift) || w.keep("a", slices.Clone(wantDrift)) || !slices.Equal(w.Drift("a"), wantDrift) {
		t.Error("the same drift read twice counts as a change, or is not kept")
	}
	if !w.keep("a", nil) || len(w.Drift("a")) != 0 || w.keep("a", nil) {
		t.Error("drift gone is not a change once")
	}
}

func TestSameOptionValue(t *testing.T) {
	for _, tc := range []struct {
		have, want string
		same       bool
	}{
		{"20.000000", "20", true}, {"20", "20", true}, {"20.5", "20", false},
		{"true", "True", true}, {"false", "0", true}, {"true", "1", true},
		{"upmap", "upmap", true}, {"upmap", "crush-compat", false}, {"", "20", false},
	} {
		if got := sameOptionValue(tc.have, tc.want); got != tc.same {
			t.Errorf("sameOptionValue(%q, %q) = %v, want %v", tc.have, tc.want, got, tc.same)
		}
	}
}

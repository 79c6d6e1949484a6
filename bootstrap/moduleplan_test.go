// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// moduleLs builds a `mgr module ls` answer: always-on, enabled, and disabled
// modules ("name" can run, "!name" cannot).
func moduleLs(alwaysOn, enabled, disabled []string) ceph.Modules {
	m := ceph.Modules{AlwaysOn: alwaysOn, Enabled: enabled}
	for _, d := range disabled {
		if name, ok := strings.CutPrefix(d, "!"); ok {
			m.Disabled = append(m.Disabled, ceph.ModuleInfo{Name: name, ErrorString: "No module named 'kubernetes'"})
		} else {
			m.Disabled = append(m.Disabled, ceph.ModuleInfo{Name: d, CanRun: true})
		}
	}
	return m
}

// What each release's `mgr module ls` says of the modules the seed wants, on
// a fresh cluster (the always-on lists are those the mgr map of 16.2.15
// keeps per release).
var (
	mimicLs    = moduleLs(nil, []string{"balancer", "iostat", "restful", "status"}, []string{"dashboard", "influx", "prometheus", "telemetry"})
	nautilusLs = moduleLs([]string{"balancer", "crash", "devicehealth", "orchestrator_cli", "progress", "rbd_support", "status", "volumes"},
		[]string{"iostat", "restful"}, []string{"dashboard", "prometheus", "rook"})
	laterLs = moduleLs([]string{"balancer", "crash", "devicehealth", "orchestrator", "pg_autoscaler", "progress", "rbd_support", "status", "telemetry", "volumes"},
		[]string{"iostat", "nfs", "restful"}, []string{"dashboard", "prometheus", "rook"})
)

// describe writes a step as an operator would type it.
func describe(s cephCall) string {
	out := "ceph " + strings.Join(s.Cmd.Args, " ")
	if s.Password {
		out += " -i <password>"
	}
	if s.Unless != nil {
		out += " (unless " + strings.Join(s.Unless.Args, " ") + ")"
	}
	if s.OnNotFound != nil {
		out += " (on ENOENT: " + strings.Join(s.OnNotFound.Args, " ") + ")"
	}
	return out
}

func TestPlanModules(t *testing.T) {
	seed := contract.DefaultModules
	v := func(s string) ceph.Version {
		r, err := ceph.ParseVersion("ceph version " + s + " (0) x (stable)")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	cert := "ceph dashboard create-self-signed-cert (unless config-key exists mgr/dashboard/crt)"
	// options are the module options set before the modules start (Nautilus on).
	options := []string{
		"ceph config set mgr.a mgr/prometheus/server_port 9283 --force",
		"ceph config set mgr.a mgr/dashboard/ssl true --force",
		"ceph config set mgr.a mgr/dashboard/ssl_server_port 8443 --force",
	}
	then := func(first []string, rest ...string) []string { return append(slices.Clone(first), rest...) }
	login := "ceph dashboard ac-user-set-password admin --force-password -i <password> (on ENOENT: dashboard ac-user-create admin administrator --force-password)"
	cases := map[string]struct {
		in                   moduleInputs
		steps                []string
		modules, unavailable []string
		skipped              []string // module: the start of why
		dashboard            bool
		backend              string
	}{
		"mimic 13.2 (the seed's): no orchestrator or rook before Nautilus, config set without --force, login left to the operator": {
			in: moduleInputs{Release: v("13.2.3"), Want: seed, Modules: mimicLs},
			steps: []string{
				"ceph config set mgr.a mgr/prometheus/server_port 9283",
				"ceph config set mgr.a mgr/dashboard/ssl true",
				"ceph config set mgr.a mgr/dashboard/ssl_server_port 8443",
				"ceph mgr module enable prometheus",
				"ceph mgr module enable dashboard",
				cert,
			},
			modules: []string{"prometheus", "dashboard"}, unavailable: []string{"orchestrator_cli", "rook"},
			skipped: []string{"orchestrator_cli: the orchestrator needs Ceph Nautilus", "rook: the rook module needs Ceph Nautilus",
				"dashboard: Ceph 13.2.3 takes the dashboard password only on the command line"},
		},
		"nautilus 14.2: orchestrator_cli always on, `orchestrator set backend`": {
			in: moduleInputs{Release: v("14.2.22"), Want: seed, Modules: nautilusLs, Backend: "rook"},
			steps: then(options,
				"ceph mgr module enable rook",
				"ceph mgr module enable prometheus",
				"ceph mgr module enable dashboard",
				"ceph orchestrator set backend rook",
				cert,
			),
			modules: seed, backend: "rook",
			skipped: []string{"dashboard: Ceph 14.2.22 takes the dashboard password only on the command line"},
		},
		"octopus 15.2: orchestrator always on, `orch set backend`": {
			in: moduleInputs{Release: v("15.2.17"), Want: seed, Modules: laterLs, Backend: "rook"},
			steps: then(options,
				"ceph mgr module enable rook",
				"ceph mgr module enable prometheus",
				"ceph mgr module enable dashboard",
				"ceph orch set backend rook",
				cert,
			),
			modules: seed, backend: "rook",
			skipped: []string{"dashboard: Ceph 15.2.17 takes the dashboard password only on the command line"},
		},
		"pacific 16.2 (the default image): the whole plan, password on stdin": {
			in: moduleInputs{Release: v("16.2.15"), Want: seed, Modules: laterLs, Backend: "rook"},
			steps: then(options,
				"ceph mgr module enable rook",
				"ceph mgr module enable prometheus",
				"ceph mgr module enable dashboard",
				"ceph orch set backend rook",
				cert, login,
			),
			modules: seed, backend: "rook", dashboard: true,
		},
		"squid 19.2: as Pacific": {
			in:      moduleInputs{Release: v("19.2.3"), Want: []string{"rook"}, Modules: laterLs, Backend: "rook"},
			steps:   []string{"ceph mgr module enable rook", "ceph orch set backend rook"},
			modules: []string{"rook"}, backend: "rook",
		},
		"tentacle 20.2.4: rook left off (it crashes the mgr), so no backend": {
			in: moduleInputs{Release: v("20.2.4"), Want: seed, Modules: laterLs, Backend: "rook"},
			steps: then(options,
				"ceph mgr module enable prometheus",
				"ceph mgr module enable dashboard",
				cert, login,
			),
			modules: []string{"orchestrator_cli", "prometheus", "dashboard"}, unavailable: []string{"rook"}, dashboard: true,
			skipped: []string{"rook: Ceph 20.2.4's rook module leaks memory (20.2.2) or crashes the mgr (20.2.3, 20.2.4); Rook turns it off there too (rook#18213)"},
		},
		"upgraded into rook's broken window: the rook this controller turned on is turned off": {
			in: moduleInputs{Release: v("20.2.3"), Want: []string{"rook"}, Ours: []string{"rook"}, Backend: "rook", Prev: mgrstatus.Status{Backend: "rook"},
				Modules: moduleLs(laterLs.AlwaysOn, []string{"rook"}, nil)},
			steps:       []string{"ceph mgr module disable rook"},
			unavailable: []string{"rook"}, backend: "rook",
			skipped: []string{"rook: Ceph 20.2.3's rook module leaks memory (20.2.2) or crashes the mgr (20.2.3, 20.2.4); Rook turns it off there too (rook#18213)"},
		},
		"someone else's rook in the broken window: left alone, reported": {
			in: moduleInputs{Release: v("20.2.2"), Want: []string{"rook"}, Backend: "rook",
				Modules: moduleLs(laterLs.AlwaysOn, []string{"rook"}, nil)},
			unavailable: []string{"rook"},
			skipped:     []string{"rook: Ceph 20.2.2's rook module leaks memory (20.2.2) or crashes the mgr (20.2.3, 20.2.4); Rook turns it off there too (rook#18213)"},
		},
		"tentacle 20.2.1, before the broken window: rook on as on Squid": {
			in:      moduleInputs{Release: v("20.2.1"), Want: []string{"rook"}, Modules: laterLs, Backend: "rook"},
			steps:   []string{"ceph mgr module enable rook", "ceph orch set backend rook"},
			modules: []string{"rook"}, backend: "rook",
		},
		"at rest: everything on and recorded, nothing to run": {
			in: moduleInputs{Release: v("16.2.15"), Want: seed, Backend: "rook", Prev: mgrstatus.Status{Dashboard: true, Backend: "rook", MetricsPort: 9283, DashboardPort: 8443},
				Modules: moduleLs(laterLs.AlwaysOn, []string{"dashboard", "prometheus", "rook"}, nil)},
			modules: seed, backend: "rook", dashboard: true,
		},
		"a second mgr finds every module on: only its own ports, and its dashboard login is the cluster's (set again, idempotent)": {
			in: moduleInputs{Release: v("16.2.15"), MgrID: "b", Want: seed, Backend: "rook", Prev: mgrstatus.Status{Backend: "rook"},
				Modules: moduleLs(laterLs.AlwaysOn, []string{"dashboard", "prometheus", "rook"}, nil), MetricsPort: 19283, DashboardPort: 18443},
			steps: []string{
				"ceph config set mgr.b mgr/prometheus/server_port 19283 --force",
				"ceph config set mgr.b mgr/dashboard/ssl true --force",
				"ceph config set mgr.b mgr/dashboard/ssl_server_port 18443 --force",
				cert, login,
			},
			modules: seed, backend: "rook", dashboard: true,
		},
		"a container port changed: that option set again, no module toggled": {
			in: moduleInputs{Release: v("16.2.15"), Want: seed, Backend: "rook", Prev: mgrstatus.Status{Dashboard: true, Backend: "rook", MetricsPort: 9283, DashboardPort: 8443},
				Modules: moduleLs(laterLs.AlwaysOn, []string{"dashboard", "prometheus", "rook"}, nil), MetricsPort: 9284, DashboardPort: 8443},
			steps:   []string{"ceph config set mgr.a mgr/prometheus/server_port 9284 --force"},
			modules: seed, backend: "rook", dashboard: true,
		},
		"rook on from an interrupted run, backend not recorded: only the backend": {
			in: moduleInputs{Release: v("16.2.15"), Want: []string{"rook"}, Backend: "rook",
				Modules: moduleLs(laterLs.AlwaysOn, []string{"rook"}, nil)},
			steps: []string{"ceph orch set backend rook"}, modules: []string{"rook"}, backend: "rook",
		},
		"dashboard on, login never configured: certificate and login, no toggle": {
			in: moduleInputs{Release: v("17.2.7"), Want: []string{"dashboard"}, Prev: mgrstatus.Status{DashboardPort: 8443},
				Modules: moduleLs(laterLs.AlwaysOn, []string{"dashboard"}, nil)},
			steps: []string{cert, login}, modules: []string{"dashboard"}, dashboard: true,
		},
		"nautilus without orchestrator_cli always on: enabled": {
			in: moduleInputs{Release: v("14.2.0"), Want: []string{"orchestrator_cli"},
				Modules: moduleLs(nil, nil, []string{"orchestrator_cli"})},
			steps: []string{"ceph mgr module enable orchestrator_cli"}, modules: []string{"orchestrator_cli"},
		},
		"a module that cannot run and one the release lacks are skipped, not enabled": {
			in: moduleInputs{Release: v("18.2.4"), Want: []string{"rook", "influx"},
				Modules: moduleLs(laterLs.AlwaysOn, nil, []string{"!rook"})},
			unavailable: []string{"rook", "influx"},
			skipped:     []string{"rook: cannot run: No module named 'kubernetes'", "influx: this Ceph release has no such module"},
		},
		"module ports follow the mgr container's ports": {
			in: moduleInputs{Release: v("16.2.15"), MgrID: "b", Want: []string{"prometheus", "dashboard"}, Modules: laterLs,
				MetricsPort: 19283, DashboardPort: 18443},
			steps: []string{
				"ceph config set mgr.b mgr/prometheus/server_port 19283 --force",
				"ceph config set mgr.b mgr/dashboard/ssl true --force",
				"ceph config set mgr.b mgr/dashboard/ssl_server_port 18443 --force",
				"ceph mgr module enable prometheus",
				"ceph mgr module enable dashboard",
				cert, login,
			},
			modules: []string{"prometheus", "dashboard"}, dashboard: true,
		},
		"a module it turned on, removed from the cluster's set: disabled once": {
			in: moduleInputs{Release: v("16.2.15"), Want: []string{"prometheus"}, Ours: []string{"prometheus", "dashboard"}, Prev: mgrstatus.Status{Modules: []string{"prometheus", "dashboard"}, MetricsPort: 9283, DashboardPort: 8443, Dashboard: true},
				Modules: moduleLs(laterLs.AlwaysOn, []string{"dashboard", "prometheus"}, nil)},
			steps:   []string{"ceph mgr module disable dashboard"},
			modules: []string{"prometheus"},
		},
		"a module someone else turned on, removed from the cluster's set: left on": {
			in: moduleInputs{Release: v("16.2.15"), Want: []string{"prometheus"}, Ours: []string{"prometheus"}, Prev: mgrstatus.Status{Modules: []string{"prometheus", "dashboard"}, MetricsPort: 9283, DashboardPort: 8443, Dashboard: true},
				Modules: moduleLs(laterLs.AlwaysOn, []string{"dashboard", "prometheus"}, nil)},
			modules: []string{"prometheus"},
		},
		"removed, and off in Ceph already (another mgr turned it off): nothing": {
			in: moduleInputs{Release: v("16.2.15"), Want: []string{"prometheus"}, Ours: []string{"prometheus", "dashboard"}, Prev: mgrstatus.Status{Modules: []string{"prometheus", "dashboard"}, MetricsPort: 9283, DashboardPort: 8443, Dashboard: true},
				Modules: moduleLs(laterLs.AlwaysOn, []string{"prometheus"}, nil)},
			modules: []string{"prometheus"},
		},
		"removed but always on (orchestrator_cli on Pacific): never disabled": {
			in: moduleInputs{Release: v("16.2.15"), Want: []string{"prometheus"}, Ours: []string{"orchestrator_cli", "prometheus"}, Prev: mgrstatus.Status{Modules: []string{"orchestrator_cli", "prometheus"}, MetricsPort: 9283},
				Modules: moduleLs(laterLs.AlwaysOn, []string{"prometheus"}, nil)},
			modules: []string{"prometheus"},
		},
		"enabled by hand, never ours: left alone": {
			in: moduleInputs{Release: v("16.2.15"), Want: []string{"prometheus"}, Prev: mgrstatus.Status{Modules: []string{"prometheus"}, MetricsPort: 9283},
				Modules: moduleLs(laterLs.AlwaysOn, []string{"prometheus", "influx"}, nil)},
			modules: []string{"prometheus"},
		},
		"no backend configured: rook alone": {
			in:    moduleInputs{Release: v("16.2.15"), Want: []string{"rook"}, Modules: laterLs},
			steps: []string{"ceph mgr module enable rook"}, modules: []string{"rook"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if c.in.MgrID == "" {
				c.in.MgrID = "a"
			}
			if c.in.MetricsPort == 0 {
				c.in.MetricsPort, c.in.DashboardPort = contract.PortMetrics, contract.PortDashboard
			}
			p := planModules(c.in)
			var steps []string
			for _, s := range p.Calls {
				steps = append(steps, describe(s))
			}
			if !slices.Equal(steps, c.steps) {
				t.Errorf("steps:\n  %s\nwant:\n  %s", strings.Join(steps, "\n  "), strings.Join(c.steps, "\n  "))
			}
			if !slices.Equal(p.Modules, c.modules) || !slices.Equal(p.Unavailable, c.unavailable) {
				t.Errorf("modules %v unavailable %v, want %v and %v", p.Modules, p.Unavailable, c.modules, c.unavailable)
			}
			if p.Dashboard != c.dashboard || p.Backend != c.backend {
				t.Errorf("dashboard %v backend %q, want %v and %q", p.Dashboard, p.Backend, c.dashboard, c.backend)
			}
			if len(p.Skipped) != len(c.skipped) {
				t.Fatalf("skipped %+v, want %v", p.Skipped, c.skipped)
			}
			for i, s := range p.Skipped {
				if got := s.Module + ": " + s.Why; !strings.HasPrefix(got, c.skipped[i]) {
					t.Errorf("skipped[%d] = %q, want it to start %q", i, got, c.skipped[i])
				}
			}
			// No password, ever, in what a step puts on the command line.
			for _, s := range p.Calls {
				if s.Cmd.Stdin != nil || (s.OnNotFound != nil && s.OnNotFound.Stdin != nil) {
					t.Errorf("a plan carries stdin: %s", describe(s))
				}
			}
		})
	}
}

// Running the plan and planning again, with what Ceph then reports and the
// status the run recorded, plans nothing: no module is ever toggled twice.
func TestPlanModulesConverges(t *testing.T) {
	for _, rel := range []string{"13.2.3", "14.2.22", "15.2.17", "16.2.15", "19.2.3", "20.2.0"} {
		t.Run(rel, func(t *testing.T) {
			r, _ := ceph.ParseVersion("ceph version " + rel)
			ls := laterLs
			switch {
			case r.Major == 13:
				ls = mimicLs
			case r.Major == 14:
				ls = nautilusLs
			}
			in := moduleInputs{Release: r, MgrID: "a", Want: contract.DefaultModules, Modules: ls, Backend: "rook", MetricsPort: 9283, DashboardPort: 8443}
			first := planModules(in)
			after := ls
			after.Enabled = slices.Clone(ls.Enabled)
			for _, s := range first.Calls {
				if s.Cmd.Name == "mgr module enable" {
					after.Enabled = append(after.Enabled, s.Cmd.Args[3])
				}
			}
			in.Modules, in.Prev = after, mgrstatus.Status{Dashboard: first.Dashboard, Backend: first.Backend, MetricsPort: first.MetricsPort, DashboardPort: first.DashboardPort}
			second := planModules(in)
			var again []string
			for _, s := range second.Calls {
				if s.Cmd.Kind == ceph.Write && s.Unless == nil {
					again = append(again, describe(s))
				}
			}
			if len(again) > 0 {
				t.Errorf("second plan writes again: %v", again)
			}
			if fmt.Sprint(second.Modules, second.Unavailable) != fmt.Sprint(first.Modules, first.Unavailable) {
				t.Errorf("status moved: %v %v -> %v %v", first.Modules, first.Unavailable, second.Modules, second.Unavailable)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]ceph.Version{
		"ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific (stable)": {Major: 16, Minor: 2, Patch: 15},
		"ceph version 13.2.3 (9bf3c8b1a04b0aa4a3cc78456a508f1c48e70279) mimic (stable)":    {Major: 13, Minor: 2, Patch: 3},
		"ceph version 20.2.0-1-g0b7e3b8 (0b7e3b8) tentacle (stable)":                       {Major: 20, Minor: 2},
	} {
		if got, err := ceph.ParseVersion(in); err != nil || got != want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ceph.ParseVersion("v16.2.15"); err == nil {
		t.Error("an image tag parsed as a daemon banner")
	}
}

// TestModuleReleaseRulesOnBothSides: each release rule of the module
// planner at the release where it starts, the one before and the one after.
func TestModuleReleaseRulesOnBothSides(t *testing.T) {
	cases := map[string]map[string]string{ // module -> release -> the module enabled ("" for none)
		"rook": {
			"13.2.10": "", "14.0.0": "rook", "14.2.22": "rook", "19.2.3": "rook",
			"20.1.9": "rook", "20.2.1": "rook", "20.2.2": "", "20.2.4": "", "20.2.5": "rook", "21.2.0": "rook",
		},
		"orchestrator_cli": {
			"13.2.10": "", "14.0.0": "orchestrator_cli", "14.2.22": "orchestrator_cli", "15.0.0": "orchestrator", "15.2.17": "orchestrator",
		},
		"prometheus": {"13.2.10": "prometheus", "20.2.0": "prometheus"},
	}
	for module, releases := range cases {
		for release, want := range releases {
			rel, err := ceph.ParseVersion("ceph version " + release + " (0) x (stable)")
			if err != nil {
				t.Fatal(err)
			}
			got, why := moduleFor(module, rel)
			if got != want || (got == "") != (why != "") {
				t.Errorf("%s on %s: %q (%s), want %q", module, release, got, why, want)
			}
		}
	}
}

// TestPlanModulesRecord: the record of the modules the controller turned on
// gains what the plan enables, loses what it disables, and never gains a
// module that was on before (someone else's).
func TestPlanModulesRecord(t *testing.T) {
	r, _ := ceph.ParseVersion("ceph version 16.2.15")
	for name, tc := range map[string]struct {
		want, ours, enabled []string
		record              []string
	}{
		"enables join the record":                 {want: []string{"prometheus", "dashboard"}, record: []string{"dashboard", "prometheus"}},
		"a module on before never joins":          {want: []string{"prometheus", "dashboard"}, enabled: []string{"prometheus"}, record: []string{"dashboard"}},
		"a disable leaves the record":             {want: []string{"prometheus"}, ours: []string{"dashboard", "prometheus"}, enabled: []string{"dashboard", "prometheus"}, record: []string{"prometheus"}},
		"someone else's module: kept, not record": {want: nil, ours: nil, enabled: []string{"dashboard"}, record: nil},
		"at rest: the record as it was":           {want: []string{"prometheus"}, ours: []string{"prometheus"}, enabled: []string{"prometheus"}, record: []string{"prometheus"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := planModules(moduleInputs{Release: r, MgrID: "a", Want: tc.want, Ours: tc.ours, Modules: moduleLs(laterLs.AlwaysOn, tc.enabled, []string{"prometheus", "dashboard"}),
				MetricsPort: 9283, DashboardPort: 8443})
			if !slices.Equal(p.Ours, tc.record) {
				t.Errorf("record %v, want %v", p.Ours, tc.record)
			}
			for _, s := range p.Calls {
				if s.Cmd.Name == "mgr module disable" && !slices.Contains(tc.ours, s.Cmd.Args[3]) {
					t.Errorf("disables %s, which is not the controller's", s.Cmd.Args[3])
				}
			}
		})
	}
}

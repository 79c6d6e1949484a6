// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// moduleInputs is everything the module plan depends on: the release the mgr
// runs, the modules wanted, what `ceph mgr module ls` reports, and what the
// previous reconciles did (the status).
type moduleInputs struct {
	Release ceph.Version
	MgrID   string
	Want    []string
	Modules ceph.Modules
	Prev    mgrstatus.Status
	// MetricsPort and DashboardPort are the mgr container's ports.
	MetricsPort, DashboardPort int32
	// Backend is the orchestrator backend to set once rook is on ("" to skip).
	Backend string
	// Ours are the modules this controller turned on in the cluster, as its
	// record in Ceph says (contract.ModulesRecordKey): the only ones it ever turns
	// off. A module someone else turned on, before the controller ran or
	// beside it, is never disabled by it.
	Ours []string
}

// cephCall is one ceph command of a plan (a reconcile has steps; a plan
// has calls).
type cephCall struct {
	Cmd ceph.Command
	// Unless is a read whose success means the step is done already.
	Unless *ceph.Command
	// OnNotFound runs when Cmd answers ENOENT (a user that does not exist yet).
	OnNotFound *ceph.Command
	// Password: the commands read the dashboard password on stdin.
	Password bool
	// Retry: the step may meet a mgr that restarts after a module enable.
	Retry bool
}

// skip is a wanted module, or part of one, that the plan leaves out, and why.
type skip struct {
	Module, Why string
	// Login: the module runs; only its login is not configured.
	Login bool
}

// modulePlan is what to run, in order, and what the status says once it ran.
type modulePlan struct {
	Calls []cephCall
	// Enabled and Disabled are the modules the calls turn on and off (for the Events).
	Enabled, Disabled []string
	// Modules are the wanted modules on once the calls ran; Unavailable the
	// wanted ones this release lacks or cannot run.
	Modules, Unavailable []string
	Skipped              []skip
	// Ours is the record of the modules this controller turned on, once
	// the calls ran: Ours of the inputs, plus Enabled, less Disabled.
	Ours []string
	// MetricsPort and DashboardPort are the ports set for the mgr after.
	MetricsPort, DashboardPort int32
	// Dashboard and Backend are Status.Dashboard and Status.Backend after.
	Dashboard bool
	Backend   string
}

// planModules decides the ceph commands that bring a mgr's modules to what is
// wanted, for the release it runs. It never toggles a module that is on, and
// does again only what the status does not record as done.
//
// What differs between releases (ceph/ceph and Rook's history):
//   - orchestrator_cli and rook: Rook enabled them from Nautilus (14) on;
//     Octopus (15) folded orchestrator_cli into the always-on orchestrator
//     module and renamed `orchestrator set backend` to `orch set backend`.
//   - rook is broken on Tentacle 20.2.2 to 20.2.4 (rook#18213): left off,
//     and turned off where this controller had turned it on.
//   - `config set ... --force` (options of modules not loaded yet) exists
//     from Nautilus on.
//   - the dashboard admin's password can be passed on stdin (`-i -`) with
//     `--force-password` from Pacific (16.2) on; older releases take it on the
//     command line, where it lands in the process table and Ceph's audit log,
//     so there the login is left for the operator and reported.
func planModules(in moduleInputs) modulePlan {
	rel := in.Release
	on := map[string]bool{}
	for _, m := range append(slices.Clone(in.Modules.AlwaysOn), in.Modules.Enabled...) {
		on[m] = true
	}
	canRun := map[string]string{} // name -> why not ("" when it can)
	for _, m := range in.Modules.Disabled {
		canRun[m.Name] = ""
		if !m.CanRun {
			canRun[m.Name] = "cannot run: " + m.ErrorString
		}
	}
	var p modulePlan
	var enables []cephCall
	for _, want := range in.Want {
		name, why := moduleFor(want, rel)
		if why == "" && !on[name] {
			var known bool
			why, known = canRun[name]
			if !known {
				why = "this Ceph release has no such module"
			}
		}
		if why != "" {
			p.Unavailable = append(p.Unavailable, want)
			p.Skipped = append(p.Skipped, skip{Module: want, Why: why})
			continue
		}
		p.Modules = append(p.Modules, want)
		if !on[name] {
			on[name] = true
			p.Enabled = append(p.Enabled, want)
			enables = append(enables, cephCall{Retry: true, Cmd: ceph.Command{Name: "mgr module enable", Kind: ceph.Write,
				Args: []string{"mgr", "module", "enable", name}}})
		}
	}
	// A module this controller turned on (its record, in.Ours), and the
	// cluster no longer wants, is turned off once: the record then no longer
	// lists it, and a module off in Ceph (another mgr of the cluster turned
	// it off) is left alone. A module it did not turn on is never its to
	// turn off, whatever its status says. So is one still wanted that this
	// release cannot run safely (rook, after an upgrade into its broken window).
	var disables []cephCall
	for _, had := range in.Ours {
		name, why := moduleFor(had, rel)
		if why != "" {
			name = had
		}
		if slices.Contains(p.Modules, had) || slices.Contains(in.Modules.AlwaysOn, name) || !slices.Contains(in.Modules.Enabled, name) {
			continue
		}
		p.Disabled = append(p.Disabled, had)
		disables = append(disables, cephCall{Retry: true, Cmd: ceph.Command{Name: "mgr module disable", Kind: ceph.Write,
			Args: []string{"mgr", "module", "disable", name}}})
	}
	// Each mgr's module ports follow its own container's, set per mgr daemon
	// whenever the status does not record them for it, whether or not the
	// module is on already (a second mgr finds it on; it reads its options
	// when it starts serving as the active mgr). A module started with its
	// options set needs no restart: options come before the enables.
	if slices.Contains(p.Modules, "prometheus") {
		if in.Prev.MetricsPort != in.MetricsPort {
			p.Calls = append(p.Calls, configSet(rel, in.MgrID, "mgr/prometheus/server_port", strconv.Itoa(int(in.MetricsPort))))
		}
		p.MetricsPort = in.MetricsPort
	}
	if slices.Contains(p.Modules, "dashboard") {
		if in.Prev.DashboardPort != in.DashboardPort {
			p.Calls = append(p.Calls,
				configSet(rel, in.MgrID, "mgr/dashboard/ssl", "true"),
				configSet(rel, in.MgrID, "mgr/dashboard/ssl_server_port", strconv.Itoa(int(in.DashboardPort))))
		}
		p.DashboardPort = in.DashboardPort
	}
	p.Calls = append(p.Calls, enables...)
	p.Calls = append(p.Calls, disables...)
	for _, m := range append(slices.Clone(in.Ours), p.Enabled...) {
		if !slices.Contains(p.Disabled, m) && !slices.Contains(p.Ours, m) {
			p.Ours = append(p.Ours, m)
		}
	}
	slices.Sort(p.Ours)

	p.Backend = in.Prev.Backend
	if in.Backend != "" && slices.Contains(p.Modules, "rook") && p.Backend != in.Backend {
		words := []string{"orch", "set", "backend", in.Backend}
		if !rel.AtLeast(contract.Octopus) {
			words[0] = "orchestrator"
		}
		p.Calls = append(p.Calls, cephCall{Retry: true, Cmd: ceph.Command{Name: strings.Join(words[:3], " "), Kind: ceph.Write, Args: words}})
		p.Backend = in.Backend
	}

	p.Dashboard = in.Prev.Dashboard && on["dashboard"] && slices.Contains(p.Modules, "dashboard")
	if slices.Contains(p.Modules, "dashboard") && !p.Dashboard {
		p.Calls = append(p.Calls, cephCall{Retry: true,
			Cmd:    ceph.Command{Name: "dashboard create-self-signed-cert", Kind: ceph.Write, Args: []string{"dashboard", "create-self-signed-cert"}},
			Unless: &ceph.Command{Name: "config-key exists", Kind: ceph.Read, Args: []string{"config-key", "exists", "mgr/dashboard/crt"}},
		})
		if rel.AtLeast(contract.Pacific) {
			p.Calls = append(p.Calls, cephCall{Retry: true, Password: true,
				Cmd: ceph.Command{Name: "dashboard ac-user-set-password", Kind: ceph.Write,
					Args: []string{"dashboard", "ac-user-set-password", contract.DashboardUser, "--force-password"}},
				// ac-user-create answers 0 for an existing user without
				// changing it, so setting the password comes first.
				OnNotFound: &ceph.Command{Name: "dashboard ac-user-create", Kind: ceph.Write,
					Args: []string{"dashboard", "ac-user-create", contract.DashboardUser, "administrator", "--force-password"}},
			})
			p.Dashboard = true
		} else {
			p.Skipped = append(p.Skipped, skip{Module: "dashboard", Login: true, Why: fmt.Sprintf(
				"Ceph %s takes the dashboard password only on the command line, where it would reach the process table and Ceph's audit log; "+
					"the dashboard runs without the %q user: create it by hand, or run Pacific (16.2) or later", rel, contract.DashboardUser)})
		}
	}
	return p
}

// moduleFor is the module that provides want on release rel, or why none does.
func moduleFor(want string, rel ceph.Version) (name, why string) {
	switch want {
	case "orchestrator_cli":
		if !rel.AtLeast(contract.Nautilus) {
			return "", "the orchestrator needs Ceph Nautilus (14) or later"
		}
		if rel.AtLeast(contract.Octopus) {
			return "orchestrator", "" // always on from Octopus
		}
	case "rook":
		if !rel.AtLeast(contract.Nautilus) {
			return "", "the rook module needs Ceph Nautilus (14) or later"
		}
		if rel.In(contract.RookModuleBroken) {
			return "", fmt.Sprintf("Ceph %s's rook module leaks memory (20.2.2) or crashes the mgr (20.2.3, 20.2.4); Rook turns it off there too (rook#18213)", rel)
		}
	}
	return want, ""
}

// configSet sets a module option for one mgr; --force (from Nautilus) lets the
// mons take options of a module that has not loaded yet.
func configSet(rel ceph.Version, id, option, value string) cephCall {
	return configSetSection(rel, "mgr."+id, option, value)
}

// configSetSection sets an option for a section: one mgr ("mgr.<id>") or
// every mgr ("mgr").
func configSetSection(rel ceph.Version, section, option, value string) cephCall {
	args := []string{"config", "set", section, option, value}
	if rel.AtLeast(contract.Nautilus) {
		args = append(args, "--force")
	}
	return cephCall{Cmd: ceph.Command{Name: "config set", Kind: ceph.Write, Args: args}}
}

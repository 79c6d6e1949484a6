// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// moduleOptionsPlan is what brings section mgr to the policy's moduleOptions.
type moduleOptionsPlan struct {
	// Calls set the options that differ and remove those the controller
	// had set that the policy no longer names.
	Calls []cephCall
	// Ours is the record once the calls ran: the options this controller
	// set, sorted.
	Ours []string
	// Set and Removed name the options the calls change (for the Event).
	Set, Removed []string
}

// moduleOptionName is the configuration database's name of a module option.
func moduleOptionName(module, option string) string { return "mgr/" + module + "/" + option }

// planModuleOptions decides the calls that bring section mgr (have, as
// `config dump` reads it) to want: `config set mgr ... --force` (a module
// not loaded yet takes its options so) only where the value differs, and
// `config rm mgr ...` only for an option in ours (this controller set it)
// that want no longer names. An option already as wanted is not claimed:
// whoever set it keeps it when the policy drops it.
func planModuleOptions(rel ceph.Version, want map[string]v1alpha1.ModuleOptionValues, have map[string]string, ours []string) moduleOptionsPlan {
	var p moduleOptionsPlan
	wanted := map[string]bool{}
	for _, module := range slices.Sorted(maps.Keys(want)) {
		for _, option := range slices.Sorted(maps.Keys(want[module])) {
			name, value := moduleOptionName(module, option), want[module][option]
			wanted[name] = true
			if v, set := have[name]; !set || v != value {
				p.Calls = append(p.Calls, configSetSection(rel, "mgr", name, value))
				p.Set = append(p.Set, name+"="+value)
				p.Ours = append(p.Ours, name)
			} else if slices.Contains(ours, name) {
				p.Ours = append(p.Ours, name)
			}
		}
	}
	for _, name := range sortedCopy(ours) {
		if wanted[name] {
			continue
		}
		if _, set := have[name]; set {
			p.Calls = append(p.Calls, cephCall{Cmd: ceph.Command{Name: "config rm", Kind: ceph.Write, Args: []string{"config", "rm", "mgr", name}}})
			p.Removed = append(p.Removed, name)
		}
	}
	slices.Sort(p.Ours)
	return p
}

// moduleOptionsHash names a moduleOptions ("" for none): the status records
// it once the options are in force, so a mgr reconciled again reads nothing.
func moduleOptionsHash(want map[string]v1alpha1.ModuleOptionValues) string {
	if len(want) == 0 {
		return ""
	}
	b, _ := json.Marshal(want) // maps marshal with sorted keys
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// setModuleOptions brings the policy's moduleOptions into force on the mgr's
// cluster unless its status records them so: one read of the record and one
// of the configuration database, then only the options that differ. It runs
// before any module is enabled, so a module starts with its options.
func (r *Reconciler) setModuleOptions(ctx context.Context, s *scope, conn ceph.Conn, rel ceph.Version) error {
	want := r.moduleOptions()
	h := moduleOptionsHash(want)
	s.next.ModuleOptions = s.prev.ModuleOptions
	if h == s.prev.ModuleOptions {
		return nil
	}
	ours, err := ceph.ModuleOptionsRecord(ctx, r.Ceph, conn)
	if err != nil {
		return err
	}
	have, err := ceph.ConfigSection(ctx, r.Ceph, conn, "mgr")
	if err != nil {
		return err
	}
	plan := planModuleOptions(rel, want, have, ours)
	// The record first, as for modules: an option is claimed before it is set.
	if !slices.Equal(plan.Ours, sortedCopy(ours)) {
		if err := ceph.SetConfigKey(ctx, r.Ceph, conn, contract.ModuleOptionsRecordKey, strings.Join(plan.Ours, ",")); err != nil {
			return fmt.Errorf("recording the module options this controller sets: %w", err)
		}
	}
	for _, c := range plan.Calls {
		if err := r.runCall(ctx, conn, c, nil); err != nil {
			return err
		}
	}
	if len(plan.Set) > 0 || len(plan.Removed) > 0 {
		r.Recorder.Eventf(s.d, nil, corev1.EventTypeNormal, ReasonModuleOptionsSet, "SetModuleOptions",
			"mgr module options on section mgr: set %v, removed %v", plan.Set, plan.Removed)
	}
	s.next.ModuleOptions = h
	return nil
}

// moduleOptions are the module options in force: the policy's, else the
// Options'.
func (r *Reconciler) moduleOptions() map[string]v1alpha1.ModuleOptionValues {
	if r.Policy != nil {
		return r.Policy.Current().ModuleOptions
	}
	return r.ModuleOptions
}

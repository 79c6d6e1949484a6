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
	"strconv"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/bootstrap/audit"
	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/recovery"
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
			if v, set := have[name]; !set || !sameOptionValue(v, value) {
				p.Calls = append(p.Calls, configSetSection(rel, "mgr", name, value))
				p.Set = append(p.Set, name+"="+audit.ShownValue(name, value))
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

// sameOptionValue reports whether Ceph's value of an option is the policy's:
// Ceph stores a typed option of a loaded module in its own form (20 set by
// hand reads back as 20.000000, True as true), so numbers and booleans are
// compared as such.
func sameOptionValue(have, want string) bool {
	if have == want {
		return true
	}
	if h, err := strconv.ParseFloat(have, 64); err == nil {
		if w, err := strconv.ParseFloat(want, 64); err == nil {
			return h == w
		}
	}
	if h, err := strconv.ParseBool(have); err == nil {
		if w, err := strconv.ParseBool(want); err == nil {
			return h == w
		}
	}
	return false
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

// moduleOptionDrift are the options of want whose value on section mgr
// (have) is not the policy's, sorted by name.
func moduleOptionDrift(want map[string]v1alpha1.ModuleOptionValues, have map[string]string) []audit.OptionDrift {
	var drift []audit.OptionDrift
	for _, module := range slices.Sorted(maps.Keys(want)) {
		for _, option := range slices.Sorted(maps.Keys(want[module])) {
			name, value := moduleOptionName(module, option), want[module][option]
			if v, set := have[name]; !set || !sameOptionValue(v, value) {
				drift = append(drift, audit.OptionDrift{Name: name, Want: value, Have: have[name]})
			}
		}
	}
	return drift
}

// optionWatch reads each cluster's module options with the CephRelease
// keeper's read (a releases.Observer; one `config dump` per read, and none
// while the policy names no option): an option of the policy's
// moduleOptions that Ceph holds otherwise (changed by hand) is reported, in
// the namespace's Report (Drift, for the audit) and a Warning Event when the
// drift changes, or set back where the policy says restoreModuleOptions.
type optionWatch struct {
	Client   client.Client
	Recorder recorder.EventRecorder
	Ceph     Ceph
	// Options gives the options in force and whether to restore them.
	Options func() (map[string]v1alpha1.ModuleOptionValues, bool)
	// Applied reports whether a mgr of cluster ns records the options of
	// hash as brought into force (its sealed status): until then a
	// difference is the reconcile's to make, not a hand edit.
	Applied func(ctx context.Context, ns, hash string) bool

	mu    sync.Mutex
	drift map[string][]audit.OptionDrift
}

// Observe implements releases.Observer.
func (w *optionWatch) Observe(ctx context.Context, ns string, conn ceph.Conn, f ceph.Facts) {
	want, restore := w.Options()
	if len(want) == 0 || !w.Applied(ctx, ns, moduleOptionsHash(want)) {
		w.keep(ns, nil)
		return
	}
	have, err := ceph.ConfigSection(ctx, w.Ceph, conn, "mgr")
	if err != nil {
		logf.FromContext(ctx).WithName("module-options").Error(err, "reading the module options", "namespace", ns)
		return
	}
	drift := moduleOptionDrift(want, have)
	if len(drift) > 0 && restore {
		rel := contract.Nautilus // --force; a cluster read here runs a mgr of at least its release
		if len(f.Mgrs) > 0 {
			rel = f.Mgrs[0] // sorted: the oldest
		}
		var restored, failed []string
		for _, d := range drift {
			c := configSetSection(rel, "mgr", d.Name, d.Want)
			if _, err := w.Ceph.Run(ctx, conn, c.Cmd); err != nil {
				failed = append(failed, d.Name)
				continue
			}
			restored = append(restored, fmt.Sprintf("%s=%s (was %q)", d.Name, audit.ShownValue(d.Name, d.Want), audit.ShownValue(d.Name, d.Have)))
		}
		if len(restored) > 0 {
			recovery.ClusterEvent(ctx, w.Client, w.Recorder, ns, "", corev1.EventTypeNormal, ReasonModuleOptionsRestored, "SetModuleOptions",
				fmt.Sprintf("module options changed by hand set back to the policy's (restoreModuleOptions): %s", strings.Join(restored, ", ")))
		}
		drift = slices.DeleteFunc(drift, func(d audit.OptionDrift) bool { return !slices.Contains(failed, d.Name) })
	}
	if w.keep(ns, drift) && len(drift) > 0 {
		var what []string
		for _, d := range drift {
			what = append(what, fmt.Sprintf("%s is %q, the policy says %q", d.Name, audit.ShownValue(d.Name, d.Have), audit.ShownValue(d.Name, d.Want)))
		}
		recovery.ClusterEvent(ctx, w.Client, w.Recorder, ns, "", corev1.EventTypeWarning, ReasonModuleOptionsDrifted, "ReadModuleOptions",
			"module options differ from the policy's (changed by hand; left as they are, the policy's restoreModuleOptions sets them back): "+strings.Join(what, "; "))
	}
}

// keep records cluster ns's drift; true when it changed.
func (w *optionWatch) keep(ns string, drift []audit.OptionDrift) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.drift == nil {
		w.drift = map[string][]audit.OptionDrift{}
	}
	if slices.Equal(w.drift[ns], drift) {
		return false
	}
	if len(drift) == 0 {
		delete(w.drift, ns)
	} else {
		w.drift[ns] = drift
	}
	return true
}

// applied implements optionWatch.Applied for the reconciler's mgrs.
func (r *Reconciler) applied(ctx context.Context, ns, hash string) bool {
	ds := &appsv1.DeploymentList{}
	if err := r.Client.List(ctx, ds, client.InNamespace(ns), client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
		return false
	}
	for i := range ds.Items {
		if st, forged := r.status.Read(&ds.Items[i]); !forged && st.ModuleOptions == hash {
			return true
		}
	}
	return false
}

// Drift is cluster ns's drifted options as last read (for the audit's Report).
func (w *optionWatch) Drift(ns string) []audit.OptionDrift {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.drift[ns])
}

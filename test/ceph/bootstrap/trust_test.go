// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
	"github.com/rook-mgr/mgr-webhook/internal/mgrctl"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

// TestForgedStatusSteersNoCephWrite: the status annotation is writable by
// anyone who may edit the Deployment. A forged one (extra modules that are on
// in Ceph, phase Ready, other ports, no seal) makes the controller run no
// ceph write at all (no `mgr module disable`, nothing else): it says so in a
// StatusForged Event and overwrites the forgery with its own status.
func TestForgedStatusSteersNoCephWrite(t *testing.T) {
	ctx := t.Context()
	c := cephs[nsMain]
	name := readyMgr(t, nsMain, "a", nil)
	// Modules on by default (Pacific: iostat, nfs, restful; Tentacle: iostat,
	// nfs, nvmeof) that the controller does not want.
	on := enabledModules(t, c)
	var victims []string
	for _, m := range slices.Sorted(maps.Keys(on)) {
		if !slices.Contains(contract.DefaultModules, m) {
			victims = append(victims, m)
		}
	}
	if len(victims) < 2 {
		t.Fatalf("on in Ceph: %v; the test needs two modules a forgery could ask to disable", on)
	}
	writes := quietCluster(t, c)

	d := &appsv1.Deployment{}
	if err := get(ctx, nsMain, name, d); err != nil {
		t.Fatal(err)
	}
	real := status(t, nsMain, name)
	forged := real
	forged.Modules = append(slices.Clone(real.Modules), victims...)
	forged.Phase, forged.MetricsPort, forged.DashboardPort, forged.Seal = mgrstatus.PhaseReady, 1, 2, ""
	raw, err := json.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Annotations[contract.AnnotationBootstrapStatus] = string(raw)
	d.Labels["forged"] = "yes" // a reconcile follows either way
	if err := k8s.Patch(ctx, d, patch); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, nsMain, name, bootstrap.ReasonStatusForged, 20*time.Second)
	eventually(t, 20*time.Second, "the forged status overwritten", func(ctx context.Context) (bool, error) {
		s := status(t, nsMain, name)
		return s.Seal != "" && s.MetricsPort == real.MetricsPort && s.DashboardPort == real.DashboardPort && !slices.Contains(s.Modules, "nfs"), nil
	})
	if w := writesSince(c, writes); len(w) != 0 {
		t.Errorf("ceph writes to the cluster after a forged status, want none:\n%s", strings.Join(w, "\n"))
	}
	on = enabledModules(t, c)
	for _, m := range victims {
		if !on[m] {
			t.Errorf("module %s was turned off by a forged status", m)
		}
	}
}

// TestForgedPhaseIsNotCounted: the phase gauge (and the alerts on it) counts
// a status the controller did not seal as Pending, whatever phase it claims,
// and `mgrctl check` shows a phase as fact only when the controller's seal
// verifies (unverified to a user who may not read the status key).
// The forgery here touches only the status annotation, which brings no
// reconcile, so it stays in place while the gauge is read.
func TestForgedPhaseIsNotCounted(t *testing.T) {
	ctx := t.Context()
	name := readyMgr(t, nsMain, "a", nil)
	phases := func() (ready, pending, failed float64) {
		return metric(t, "mgr_bootstrap_mgrs", map[string]string{"phase": string(mgrstatus.PhaseReady)}),
			metric(t, "mgr_bootstrap_mgrs", map[string]string{"phase": string(mgrstatus.PhasePending)}),
			metric(t, "mgr_bootstrap_mgrs", map[string]string{"phase": string(mgrstatus.PhaseError)})
	}
	ready, pending, failed := phases()
	if ready < 1 {
		t.Fatalf("the gauge counts %v Ready mgrs with %s Ready", ready, name)
	}
	d := &appsv1.Deployment{}
	if err := get(ctx, nsMain, name, d); err != nil {
		t.Fatal(err)
	}
	forged := status(t, nsMain, name)
	forged.Phase = mgrstatus.PhaseError // the seal, copied, no longer matches
	raw, err := json.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	// mgrctl check shows the controller's status as fact only when its seal
	// verifies, read by someone who may get the status key.
	const sealedReady = "ok   bootstrap phase Ready, sealed by the controller"
	if out := mgrctlCheck(t, name, ""); !strings.Contains(out, sealedReady) {
		t.Errorf("mgrctl check of the Ready mgr, as an administrator, lacks %q:\n%s", sealedReady, out)
	}
	const unverified = `FAIL bootstrap phase "Ready" is unverified`
	if out := mgrctlCheck(t, name, viewer(t)); !strings.Contains(out, unverified) || strings.Contains(out, sealedReady) {
		t.Errorf("mgrctl check as a cluster viewer, who may not read the status key, lacks %q:\n%s", unverified, out)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Annotations[contract.AnnotationBootstrapStatus] = string(raw)
	if err := k8s.Patch(ctx, d, patch); err != nil {
		t.Fatal(err)
	}
	const notSealed = `FAIL bootstrap status not sealed by the controller: someone else wrote annotation mgr.ceph.rook.io/bootstrap-status (it says phase "Error")`
	if out := mgrctlCheck(t, name, ""); !strings.Contains(out, notSealed) {
		t.Errorf("mgrctl check of the forged status lacks %q:\n%s", notSealed, out)
	}
	eventually(t, 10*time.Second, "the forged mgr counted Pending", func(context.Context) (bool, error) {
		r, p, f := phases()
		if f != failed {
			t.Fatalf("a forged Error is counted: Error %v, was %v", f, failed)
		}
		return r == ready-1 && p == pending+1, nil
	})

	// The next reconcile writes the controller's own status back.
	if err := get(ctx, nsMain, name, d); err != nil {
		t.Fatal(err)
	}
	patch = client.MergeFrom(d.DeepCopy())
	d.Labels["forged-phase"] = "yes"
	if err := k8s.Patch(ctx, d, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the status rewritten and counted Ready", func(context.Context) (bool, error) {
		r, _, _ := phases()
		return r == ready && status(t, nsMain, name).Phase == mgrstatus.PhaseReady, nil
	})
}

// TestModulesAnnotationSteersNoCephWrite: the modules annotation is writable
// by anyone who may edit the Deployment, and the modules are the whole Ceph
// cluster's. One naming a module the policy does not offer (moduleChoices)
// is ignored: no ceph write follows, the module stays off, and an Event
// tells the editor why and what to do.
func TestModulesAnnotationSteersNoCephWrite(t *testing.T) {
	ctx := context.Background()
	c := cephs[nsMain]
	name := readyMgr(t, nsMain, "a", nil)
	if enabledModules(t, c)["alerts"] {
		t.Fatal("module alerts is on in Ceph: the test needs a module the annotation could turn on")
	}
	writes := quietCluster(t, c)
	before := status(t, nsMain, name).Modules
	setModules := func(v string) {
		t.Helper()
		d := &appsv1.Deployment{}
		if err := get(ctx, nsMain, name, d); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(d.DeepCopy())
		if v == "-" {
			delete(d.Annotations, contract.AnnotationModules)
		} else {
			metav1.SetMetaDataAnnotation(&d.ObjectMeta, contract.AnnotationModules, v)
		}
		if err := k8s.Patch(ctx, d, patch); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { setModules("-") })
	notChosen := func(module string) string {
		t.Helper()
		var note string
		eventually(t, 30*time.Second, "a ModulesNotChosen Event naming "+module, func(ctx context.Context) (bool, error) {
			list := &eventsv1.EventList{}
			if err := k8s.List(ctx, list, client.InNamespace(nsMain)); err != nil {
				return false, err
			}
			for _, e := range list.Items {
				if e.Regarding.Name == name && e.Reason == bootstrap.ReasonModulesNotChosen && strings.Contains(e.Note, module) {
					note = e.Note
					return true, nil
				}
			}
			return false, nil
		})
		return note
	}
	setModules("prometheus,alerts")
	note := notChosen("alerts")
	for _, want := range []string{"ignored", "alerts not among", "moduleChoices"} {
		if !strings.Contains(note, want) {
			t.Errorf("the Event %q does not say %q", note, want)
		}
	}
	// A second ignored annotation: once its Event is out, the reconcile of
	// the first has run to its end (one Deployment is never reconciled twice
	// at once), so every ceph call it made is counted below.
	setModules("nfs")
	notChosen("nfs")
	if w := writesSince(c, writes); len(w) != 0 {
		t.Errorf("ceph writes to the cluster after annotations the policy does not offer, want none:\n%s", strings.Join(w, "\n"))
	}
	if enabledModules(t, c)["alerts"] {
		t.Error("module alerts was turned on by an annotation the policy does not offer")
	}
	if s := status(t, nsMain, name); !slices.Equal(s.Modules, before) {
		t.Errorf("the controller's modules went from %v to %v", before, s.Modules)
	}
}

// TestModuleAnAdministratorTurnedOnStaysOn: the controller turns off only
// modules it turned on itself (its record in Ceph's config-key store, where
// no editor writes and from which no status written back replays). A module
// an administrator enabled before the controller ever ran stays on when the
// cluster's set no longer names it, even after the controller counted it
// among the mgr's modules; one the controller turned on is turned off.
func TestModuleAnAdministratorTurnedOnStaysOn(t *testing.T) {
	ctx := t.Context()
	const ns = nsAdminModules
	c := clusterOf(t, ns, cephtest.Options{})
	if enabledModules(t, c)["prometheus"] || enabledModules(t, c)["dashboard"] {
		t.Fatal("prometheus or dashboard is on in a new cluster: the test needs them off")
	}
	// The administrator's module, before any mgr Deployment exists.
	if _, err := c.Ceph(ctx, "mgr", "module", "enable", "prometheus"); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitMgrAvailable(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	d := mgrDeployment(t, ns, "a", 1, map[string]string{contract.AnnotationModules: "prometheus"})
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = k8s.Delete(t.Context(), d) }()
	choose := func(modules string) {
		t.Helper()
		cur := &appsv1.Deployment{}
		if err := get(ctx, ns, d.Name, cur); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(cur.DeepCopy())
		metav1.SetMetaDataAnnotation(&cur.ObjectMeta, contract.AnnotationModules, modules)
		if err := k8s.Patch(ctx, cur, patch); err != nil {
			t.Fatal(err)
		}
		// Bounded by Ceph's time, not a promise of ours: turning the
		// dashboard on restarts the active mgr, and Pacific's dashboard
		// took over 3 minutes to load once under a full make test.
		eventually(t, 6*time.Minute, "Ready with modules "+modules, func(context.Context) (bool, error) {
			s := status(t, ns, d.Name)
			return s.Phase == mgrstatus.PhaseReady && strings.Join(s.Modules, ",") == modules, nil
		})
	}
	eventually(t, 3*time.Minute, "Ready with prometheus", func(context.Context) (bool, error) {
		s := status(t, ns, d.Name)
		return s.Phase == mgrstatus.PhaseReady && slices.Equal(s.Modules, []string{"prometheus"}), nil
	})
	// prometheus is now among the mgr's modules (its status), but the
	// controller did not turn it on.
	choose("orchestrator_cli")
	if !enabledModules(t, c)["prometheus"] {
		t.Error("prometheus, which an administrator enabled before the controller ran, was turned off")
	}
	// The control: a module the controller turns on, then off.
	choose("dashboard")
	if !enabledModules(t, c)["dashboard"] {
		t.Fatal("dashboard was not turned on")
	}
	choose("orchestrator_cli")
	mods := enabledModules(t, c)
	if mods["dashboard"] {
		t.Error("dashboard, which the controller turned on, stayed on once the cluster's set no longer named it")
	}
	if !mods["prometheus"] {
		t.Error("prometheus was turned off with dashboard")
	}
	out, err := c.Ceph(ctx, "config-key", "get", contract.ModulesRecordKey)
	if err != nil || strings.Contains(string(out), "prometheus") || strings.Contains(string(out), "dashboard") {
		t.Errorf("the record %s is %q (%v); want neither prometheus (not the controller's) nor dashboard (turned off)", contract.ModulesRecordKey, out, err)
	}
}

// TestMonHostOutsideTheMonNetworks: a namespace's rook-ceph-config is
// writable by whoever may write Secrets there. With --mon-networks set, a
// mon_host naming another address (here the cloud metadata service) is
// refused before any connection: the mgr is in Error, not CephUnavailable
// (which a call made to that address would give), and the Event names the
// address and the flag.
func TestMonHostOutsideTheMonNetworks(t *testing.T) {
	d := mgrDeployment(t, nsFar, "a", 1, nil)
	if err := k8s.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	note := waitEvent(t, nsFar, d.Name, bootstrap.ReasonMonHostRefused, 30*time.Second)
	for _, want := range []string{farMon, "--mon-networks", "rook-ceph-config"} {
		if !strings.Contains(note, want) {
			t.Errorf("MonHostRefused Event %q does not name %q", note, want)
		}
	}
	waitPhase(t, nsFar, d.Name, mgrstatus.PhaseError, 30*time.Second)
	if st := status(t, nsFar, d.Name); !strings.Contains(st.LastError, farMon) {
		t.Errorf("lastError %q does not name the refused mon", st.LastError)
	}
	if _, ok := eventReasons(t, nsFar, d.Name)[bootstrap.ReasonCephUnavailable]; ok {
		t.Error("a CephUnavailable Event: the controller tried the refused mon")
	}

	// A refused cluster never holds the deletion: the controller made no key
	// there, so it has none to remove and lets the Deployment go at once.
	if err := k8s.Delete(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the Deployment released", func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(get(ctx, nsFar, d.Name, &appsv1.Deployment{})), nil
	})
	if _, ok := eventReasons(t, nsFar, d.Name)[bootstrap.ReasonCephUnavailable]; ok {
		t.Error("a CephUnavailable Event at deletion: the controller tried the refused mon")
	}
}

// mgrctlCheck runs `mgrctl check` on mgr Deployment name of nsMain, as the
// suite's administrator or, with as set, impersonating that user, and
// returns what it printed (whatever else it finds wrong: this suite runs no
// webhook).
func mgrctlCheck(t *testing.T, name, as string) string {
	t.Helper()
	kubeconfig := api.Kubeconfig
	if as != "" {
		var err error
		if kubeconfig, err = api.KubeconfigAs(as); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(kubeconfig)
	}
	// This API server serves no MgrPolicy: the built-in policy, as a file.
	var policy bytes.Buffer
	if err := mutate.WritePolicy(&policy, mutate.DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(file, policy.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := mgrctl.Run(context.Background(), []string{"check", "deploy/" + name, "-n", nsMain, "--kubeconfig", kubeconfig, "--policy", file}, nil, &out, &errb)
	if code >= mgrctl.ExitUsage {
		t.Fatalf("mgrctl check could not run: %s%s", out.String(), errb.String())
	}
	return out.String()
}

// viewer is a user with the built-in view rules everywhere: Deployments and
// namespaces readable, no Secret.
func viewer(t *testing.T) string {
	t.Helper()
	const user = "viewer@example.com"
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "viewer-view"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:aggregate-to-view"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	for _, o := range []client.Object{crb} {
		if err := k8s.Create(context.Background(), o); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	return user
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// covered is what a Ready status covers: the modules it found on plus those
// the release lacks, sorted.
func covered(s mgrstatus.Status) []string {
	return sortedCopy(append(append([]string(nil), s.Modules...), s.Unavailable...))
}

// portsSet reports whether the status records the mgr container's module
// ports as set in Ceph, for the modules it runs (a status of an earlier
// version records none: its second mgrs get their ports once).
func portsSet(s mgrstatus.Status, d *appsv1.Deployment) bool {
	return (!slices.Contains(s.Modules, "prometheus") || s.MetricsPort == containerPort(d, contract.PortNameMetrics, contract.PortMetrics)) &&
		(!slices.Contains(s.Modules, "dashboard") || s.DashboardPort == containerPort(d, contract.PortNameDash, contract.PortDashboard))
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return slices.Compact(c)
}

// chooseModules settles the cluster's module set (clusterModules) into
// s.want. An annotation outside the policy's choices is named in an Event;
// two mgrs that ask for different sets end the reconcile in Error, reported
// and not fought over: nothing changes until the annotations agree.
func (r *Reconciler) chooseModules(_ context.Context, s *scope) (ctrl.Result, bool, error) {
	modules, choices, _ := r.InForce()
	if why := notChosen(s.d, choices); why != "" {
		r.Recorder.Eventf(s.d, nil, corev1.EventTypeWarning, ReasonModulesNotChosen, "EnableModule", "%s", why)
	}
	want, conflict := clusterModules(s.mgrs, s.d.Namespace, modules, choices)
	if conflict != "" {
		r.Recorder.Eventf(s.d, nil, corev1.EventTypeWarning, ReasonModulesConflict, "EnableModule", "%s", conflict)
		s.next.Phase, s.next.LastError = mgrstatus.PhaseError, conflict
		return ctrl.Result{}, true, nil
	}
	s.want = want
	return ctrl.Result{}, false, nil
}

// enableModules brings the cluster's modules to s.want once Ceph lists the
// mgr. The modules are the cluster's: one mgr of a namespace reads the mgr
// map and runs its plan at a time, so two never turn a module on or off
// twice. Waiting for that is bounded: while another mgr's plan runs (its
// retries may take ModuleTimeout), this one comes back later and frees its
// worker.
func (r *Reconciler) enableModules(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	if len(s.want) == 0 && len(s.prev.Modules) == 0 {
		// No module wanted, none to turn off: nothing to ask Ceph.
		s.next.Phase, s.next.Modules, s.next.Unavailable, s.next.Dashboard = mgrstatus.PhaseReady, nil, nil, false
		return ctrl.Result{}, true, nil
	}
	conn, err := r.conn(ctx, s)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	lockCtx, cancel := context.WithTimeout(ctx, time.Second)
	unlock, err := r.Clusters.Lock(lockCtx, s.d.Namespace)
	cancel()
	if err != nil {
		logf.FromContext(ctx).V(1).Info("another mgr of the cluster is running the module plan; looking again shortly")
		return ctrl.Result{RequeueAfter: max(r.RetryInterval, time.Second)}, true, nil
	}
	defer unlock()
	mgrMap, err := r.Ceph.MgrDump(ctx, conn)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	if !mgrMap.Available || !mgrMap.Knows(s.id) {
		s.next.Phase = mgrstatus.PhaseWaitingForMgr
		return ctrl.Result{RequeueAfter: r.WaitForMgr}, true, nil
	}
	if err := r.runModulePlan(ctx, s, conn, mgrMap); err != nil {
		return ctrl.Result{}, true, err
	}
	s.next.Phase = mgrstatus.PhaseReady
	return ctrl.Result{}, false, nil
}

// runModulePlan reads the release the mgr runs, plans the module commands for its
// release (planModules) and runs them in order; what the plan leaves out
// becomes a Warning Event, once.
func (r *Reconciler) runModulePlan(ctx context.Context, s *scope, conn ceph.Conn, mgrMap ceph.MgrMap) error {
	d, prev, next := s.d, s.prev, &s.next
	md, err := r.Ceph.MgrMetadata(ctx, conn, s.id)
	if err != nil {
		return err
	}
	rel, err := ceph.ParseVersion(md.CephVersion)
	if err != nil {
		return fmt.Errorf("mgr %s's release: %w", s.id, err)
	}
	// Options before modules: a module enabled below starts with them.
	if err := r.setModuleOptions(ctx, s, conn, rel); err != nil {
		return err
	}
	ours, err := ceph.ModulesRecord(ctx, r.Ceph, conn)
	if err != nil {
		return err
	}
	plan := planModules(moduleInputs{
		Release: rel, MgrID: s.id, Want: s.want, Modules: mgrMap.Modules(rel), Prev: prev, Backend: r.OrchestratorBackend, Ours: ours,
		MetricsPort:   containerPort(d, contract.PortNameMetrics, contract.PortMetrics),
		DashboardPort: containerPort(d, contract.PortNameDash, contract.PortDashboard),
	})
	// The record goes first: a module is claimed before it is turned on, so
	// an enable that succeeds is never left unrecorded by a later failure.
	if !slices.Equal(plan.Ours, sortedCopy(ours)) {
		if err := ceph.SetConfigKey(ctx, r.Ceph, conn, contract.ModulesRecordKey, strings.Join(plan.Ours, ",")); err != nil {
			return fmt.Errorf("recording the modules this controller turns on: %w", err)
		}
	}
	next.CephVersion = rel.String()
	next.Modules, next.Unavailable = plan.Modules, plan.Unavailable
	for _, skip := range plan.Skipped {
		if skip.Login || !slices.Contains(prev.Unavailable, skip.Module) {
			r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonModuleUnavailable, "EnableModule", "mgr module %s skipped: %s", skip.Module, skip.Why)
		}
	}
	var password []byte
	for _, st := range plan.Calls {
		if st.Password && password == nil {
			if password, err = r.dashboardPassword(ctx, d); err != nil {
				return err
			}
		}
		if err := r.runCall(ctx, conn, st, password); err != nil {
			return err
		}
	}
	next.Backend, next.Dashboard = plan.Backend, plan.Dashboard
	next.MetricsPort, next.DashboardPort = plan.MetricsPort, plan.DashboardPort
	if len(plan.Disabled) > 0 {
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonModulesDisabled, "DisableModule", "mgr modules disabled, no longer in the cluster's set: %v", plan.Disabled)
	}
	if len(plan.Enabled) > 0 {
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonModulesEnabled, "EnableModule", "mgr modules enabled: %v", plan.Enabled)
	}
	if plan.Dashboard && !prev.Dashboard {
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonDashboardReady, "ConfigureDashboard",
			"dashboard on https port %d; user %q, password in Secret %s", containerPort(d, contract.PortNameDash, contract.PortDashboard),
			contract.DashboardUser, contract.DashboardPasswordSecretName)
	}
	return nil
}

// runCall runs one planned command: not at all when its Unless read
// succeeds, the OnNotFound command when it answers ENOENT, with retries when
// it may meet a restarting mgr.
func (r *Reconciler) runCall(ctx context.Context, conn ceph.Conn, s cephCall, password []byte) error {
	if s.Unless != nil {
		_, err := r.Ceph.Run(ctx, conn, *s.Unless)
		if err == nil {
			return nil
		}
		if !ceph.IsNotFound(err) {
			return err
		}
	}
	do := func(ctx context.Context) error {
		c := s.Cmd
		if s.Password {
			c.Stdin = password
		}
		_, err := r.Ceph.Run(ctx, conn, c)
		if ceph.IsNotFound(err) && s.OnNotFound != nil {
			c = *s.OnNotFound
			if s.Password {
				c.Stdin = password
			}
			_, err = r.Ceph.Run(ctx, conn, c)
		}
		return err
	}
	var err error
	if s.Retry {
		err = r.retry(ctx, do)
	} else {
		err = do(ctx)
	}
	if err != nil {
		return fmt.Errorf("ceph %s: %w", strings.Join(s.Cmd.Args, " "), err)
	}
	return nil
}

// UnknownCommandWindow is how long a step may keep meeting "no valid command
// found": a module's commands register within seconds of its enable (4-10 s
// measured here), so a command still unknown a minute on is one this
// release does not have, and waiting out ModuleTimeout would only hold a
// worker and the namespace's lock.
const UnknownCommandWindow = time.Minute

// retry repeats a step while the mgr restarts (a module's commands not loaded
// yet, EBUSY, EAGAIN, no answer), with backoff, under ModuleTimeout (Rook's
// ExecuteCephCommandWithRetry), an unknown command for UnknownCommandWindow at
// most. Any other answer ends it at once.
func (r *Reconciler) retry(ctx context.Context, step func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, r.ModuleTimeout)
	defer cancel()
	window := cmp.Or(r.unknownCommandWindow, UnknownCommandWindow)
	var last error
	var unknownSince time.Time
	backoff := wait.Backoff{Duration: r.RetryInterval, Factor: 1.5, Jitter: 0.2, Steps: 1 << 20, Cap: 15 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		last = step(ctx)
		if last == nil {
			return true, nil
		}
		if !ceph.IsUnknownCommand(last) {
			unknownSince = time.Time{}
		} else if unknownSince.IsZero() {
			unknownSince = time.Now()
		} else if time.Since(unknownSince) >= window {
			return false, last
		}
		if ceph.IsRetryable(last) {
			return false, nil
		}
		return false, last
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// containerPort returns the mgr container's port of that name, or def.
func containerPort(d *appsv1.Deployment, name string, def int32) int32 {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != contract.MgrContainerName {
			continue
		}
		for _, p := range c.Ports {
			if p.Name == name {
				return p.ContainerPort
			}
		}
	}
	return def
}

// clusterModules is the cluster's wanted module set: the defaults (the
// policy's modules) outside the policy's choices, and the choice the
// namespace's managed mgrs carry in their annotation (those without it
// follow it), or all the defaults when none does. Only an annotation within the policy's choices counts
// (contract.ChosenModules): any other is the editor's wish, not the policy's,
// and is ignored as if it were not there (notChosen says so on that
// Deployment). Two different annotations are a conflict, reported and
// not fought over: conflict names them, and nothing is planned until it is gone.
func clusterModules(ds []appsv1.Deployment, namespace string, defaults, choices []string) (want []string, conflict string) {
	sets := map[string][]string{} // the normalized set -> Deployments carrying it
	for i := range ds {
		d := &ds[i]
		mods, ok := contract.ModulesAnnotation(d.Annotations)
		if !ok || d.Namespace != namespace || d.DeletionTimestamp != nil || !contract.IsMgr(d) || contract.LeftAlone(d) {
			continue
		}
		if _, chosen := contract.ChosenModules(mods, choices); !chosen {
			continue
		}
		key := strings.Join(mods, ",")
		sets[key] = append(sets[key], d.Name)
	}
	switch len(sets) {
	case 0:
		return defaults, ""
	case 1:
		for key := range sets {
			return contract.WantedModules(defaults, choices, strings.Split(key, ",")), ""
		}
	}
	var parts []string
	for _, key := range slices.Sorted(maps.Keys(sets)) {
		slices.Sort(sets[key])
		parts = append(parts, fmt.Sprintf("%s on %s", strconv.Quote(key), strings.Join(sets[key], ", ")))
	}
	return nil, fmt.Sprintf("the mgrs of namespace %s ask for different modules (annotation %s: %s); the modules are the cluster's: give every mgr the same value, or remove it from all but one",
		namespace, contract.AnnotationModules, strings.Join(parts, "; "))
}

// notChosen is why d's modules annotation is ignored, "" when it is not:
// an Event for the Deployment's editor, naming the fix.
func notChosen(d *appsv1.Deployment, choices []string) string {
	mods, ok := contract.ModulesAnnotation(d.Annotations)
	if !ok {
		return ""
	}
	outside, chosen := contract.ChosenModules(mods, choices)
	switch {
	case chosen:
		return ""
	case len(mods) == 0:
		return fmt.Sprintf("annotation %s=%q ignored: it names no module, so the cluster runs the policy's modules; name at least one of the policy's moduleChoices (%s), or remove the annotation",
			contract.AnnotationModules, d.Annotations[contract.AnnotationModules], strings.Join(choices, ", "))
	case len(choices) == 0:
		return fmt.Sprintf("annotation %s=%q ignored: the policy offers no module choices (moduleChoices), so the cluster runs the policy's modules; remove the annotation, or ask the policy's owner to offer the modules",
			contract.AnnotationModules, d.Annotations[contract.AnnotationModules])
	default:
		return fmt.Sprintf("annotation %s=%q ignored: %s not among the policy's moduleChoices (%s), so the cluster runs the policy's modules; choose among those, or ask the policy's owner to offer more",
			contract.AnnotationModules, d.Annotations[contract.AnnotationModules], strings.Join(outside, ", "), strings.Join(choices, ", "))
	}
}

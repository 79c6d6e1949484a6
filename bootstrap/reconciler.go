// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package bootstrap is the controller that makes a completed mgr Deployment
// runnable and useful, as Rook's operator does: it creates the mgr's cephx
// keyring Secret and its metrics and dashboard Services, enables the mgr
// modules once the mgr pod is Ready and Ceph lists the mgr, and removes the
// cephx key when the Deployment goes.
package bootstrap

import (
	"context"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/cluster"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// Reconciler bootstraps mgr Deployments.
type Reconciler struct {
	// Client reads from the controller's cache (objects labelled app=rook-ceph-mgr).
	Client client.Client
	// APIReader reads the namespace's cluster Secrets by name, uncached: the
	// controller never caches Secrets it did not create.
	APIReader client.Reader
	Ceph      Ceph
	Recorder  recorder.EventRecorder
	Options

	// Clusters is each Ceph cluster's connection, breaker, retry clock and
	// module lock (bootstrap/cluster); Ceph is its guarded Ceph.
	Clusters *cluster.Cache
	// status reads and writes the statuses, sealed (bootstrap/mgrstatus).
	status *mgrstatus.Store
	// rollouts is the rollouts' memory (rollout.go).
	rollouts rolloutMemory
	// unknownCommandWindow overrides UnknownCommandWindow (tests).
	unknownCommandWindow time.Duration
}

// unavailableRetry retries a Deployment whose Ceph cluster did not answer
// on the cluster's clock (Clusters.RetryAfter: 1 s, doubling up to
// CephRetryMax, at most that far apart) instead of the workqueue's backoff
// for errors (which grows to minutes): the mgr is picked up within
// CephRetryMax of the cluster's return, at once when the probe that closes
// the breaker announces it.
func (r *Reconciler) unavailableRetry(ns string, res ctrl.Result, err error) (ctrl.Result, error) {
	if !ceph.IsUnavailable(err) {
		return res, err
	}
	return ctrl.Result{RequeueAfter: max(r.Clusters.RetryAfter(ns), time.Second)}, nil
}

// Reconcile brings one mgr Deployment one step further: it loads the scope,
// runs the bootstrap steps in order (or, for a deleted mgr, the deletion
// steps) and writes the status once, whatever they return. A bootstrapped mgr
// costs only cache reads: no ceph call and no API write.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	reconciles.Inc()
	d := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, d); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	id := contract.MgrID(d)
	if !contract.IsMgr(d) || id == "" {
		return ctrl.Result{}, nil
	}
	log := logf.FromContext(ctx).WithValues("mgr", id)
	ctx = logf.IntoContext(ctx, log)
	if g, behind := r.status.Behind(d); behind {
		// Our own status writes bring no event (the predicate drops them),
		// and this request may stand for a pending retry: look again shortly.
		log.V(1).Info("cache behind our last status write; looking again shortly", "cached", d.Generation, "written", g)
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if contract.LeftAlone(d) {
		r.status.Forget(d.UID)
		r.rollouts.released(d.UID)
		return ctrl.Result{}, r.letGo(ctx, d)
	}
	if !r.status.Ready() {
		// The status cannot be told from a forgery yet (mgrstatus), and the
		// finalizer needs it too (which keys are ours). A deletion is not
		// held past --finalizer-timeout for it: the key is kept, and said so.
		if d.DeletionTimestamp != nil && time.Since(d.DeletionTimestamp.Time) >= r.FinalizerTimeout {
			return ctrl.Result{}, r.letGoUnverified(ctx, d, id)
		}
		log.V(1).Info("waiting for the status key")
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if d.DeletionTimestamp != nil {
		r.status.Forget(d.UID) // no status is written from here on
		r.rollouts.released(d.UID)
		if !controllerutil.ContainsFinalizer(d, contract.FinalizerCephxKey) {
			return ctrl.Result{}, nil
		}
		return runSteps(ctx, r.newScope(d, id), r.decideKey, r.removeKey, r.dropFinalizer)
	}
	if err := r.addFinalizer(ctx, d); err != nil {
		return ctrl.Result{}, err
	}
	s := r.newScope(d, id)
	// The one place status and failure Events are written, whatever the
	// steps return.
	defer func() {
		err = r.writeStatus(ctx, d, s.next, s.change, err)
		if err == nil && res.IsZero() && s.again > 0 {
			res.RequeueAfter = s.again
		}
		res, err = r.unavailableRetry(req.Namespace, res, err)
	}()
	return runSteps(ctx, s,
		always(r.listMgrs),       // the namespace's mgrs (scope.go)
		always(r.ensureServices), // the cluster's metrics and dashboard Services (services.go)
		always(r.ensurePDB),      // its PodDisruptionBudget, from two mgrs on (pdb.go)
		always(r.ensureKeyring),  // the mgr's cephx key and keyring Secret (keyring.go)
		r.rollOut,                // a held change of its pods: the cluster's rollout step (rollout.go)
		r.rotateKeys,             // its cephx keys, when the policy makes them due (keyrotation.go)
		r.chooseModules,          // the cluster's module set (modules.go)
		r.atRest,                 // nothing changed since the mgr was Ready: done
		r.waitForPod,             // no Ceph call before the mgr's pod is Ready
		r.enableModules,          // the module plan for the mgr's release (modules.go)
	)
}

// A reconcileStep is one step of a reconcile. It returns stop to end the
// reconcile there (res then says when to look again, if no watch brings the
// mgr back); an error ends it too.
type reconcileStep func(ctx context.Context, s *scope) (res ctrl.Result, stop bool, err error)

// runSteps runs steps in order until one stops or fails.
func runSteps(ctx context.Context, s *scope, steps ...reconcileStep) (ctrl.Result, error) {
	for _, step := range steps {
		if res, stop, err := step(ctx, s); stop || err != nil {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// always is a step that never ends the reconcile early unless it fails.
func always(step func(context.Context, *scope) error) reconcileStep {
	return func(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
		return ctrl.Result{}, false, step(ctx, s)
	}
}

// addFinalizer makes the mgr's deletion wait for its cephx key's removal.
func (r *Reconciler) addFinalizer(ctx context.Context, d *appsv1.Deployment) error {
	if controllerutil.ContainsFinalizer(d, contract.FinalizerCephxKey) {
		return nil
	}
	patch := client.MergeFrom(d.DeepCopy())
	controllerutil.AddFinalizer(d, contract.FinalizerCephxKey)
	apiWrites.Inc()
	return r.Client.Patch(ctx, d, patch)
}

// atRest ends a reconcile that finds the mgr Ready for this generation with
// the modules the cluster wants, its ports and the policy's module options
// set: it costs no ceph call.
func (r *Reconciler) atRest(_ context.Context, s *scope) (ctrl.Result, bool, error) {
	st := s.prev
	rest := st.Phase == mgrstatus.PhaseReady && st.ObservedGeneration == s.d.Generation && slices.Equal(covered(st), sortedCopy(s.want)) && portsSet(st, s.d) &&
		(len(s.want) == 0 || st.ModuleOptions == moduleOptionsHash(r.moduleOptions()))
	return ctrl.Result{}, rest, nil
}

// waitForPod ends a reconcile while none of the mgr's pods is Ready: the pod
// watch brings it back.
func (r *Reconciler) waitForPod(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(s.d.Namespace),
		client.MatchingLabels{contract.LabelApp: contract.AppName, contract.LabelMgrID: s.id}); err != nil {
		return ctrl.Result{}, true, err
	}
	if !podReady(pods.Items) {
		s.next.Phase = mgrstatus.PhaseWaitingForPod
		return ctrl.Result{}, true, nil
	}
	return ctrl.Result{}, false, nil
}

// podReady reports whether any live pod of the list is Ready.
func podReady(pods []corev1.Pod) bool {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true
			}
		}
	}
	return false
}

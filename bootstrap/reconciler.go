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
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
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

	// written holds, per Deployment (by UID: a Deployment deleted and created
	// again under its name starts over), the generation of our last status
	// write. A cached Deployment older than that is a stale cache, not news:
	// acting on it would repeat ceph writes already done.
	written sync.Map // types.UID -> int64
	// unreachable counts, per Deployment, the reconciles in a row that found
	// its Ceph cluster unreachable.
	unreachable sync.Map // types.NamespacedName -> int
	// clusterLocks serialize the module runs of a namespace's mgrs.
	clusterLocks sync.Map // namespace -> chan struct{} (a lock that gives up with the context)
	// health holds each cluster's breaker (health.go).
	health healthBook
	// seal proves which statuses the controller wrote; lastGood is, per
	// Deployment, the status it last wrote or verified (seal.go).
	seal     *sealer
	lastGood sync.Map // types.UID -> Status
}

// unavailableRetry retries a Deployment whose Ceph cluster did not answer
// after 1 s, doubling per attempt up to CephRetryMax, instead of the
// workqueue's backoff for errors (which grows to minutes): an outage costs a
// bounded, slow series of ceph calls, and the mgr is picked up within
// CephRetryMax of the cluster's return. Any other outcome resets the count.
func (r *Reconciler) unavailableRetry(key types.NamespacedName, res ctrl.Result, err error) (ctrl.Result, error) {
	if !ceph.IsUnavailable(err) {
		r.unreachable.Delete(key)
		return res, err
	}
	n := 0
	if v, ok := r.unreachable.Load(key); ok {
		n = v.(int)
	}
	r.unreachable.Store(key, n+1)
	return ctrl.Result{RequeueAfter: min(time.Second<<min(n, 16), r.cephRetryMax())}, nil
}

// cephRetryMax is the longest wait between attempts at a cluster that does
// not answer (10 s unless set).
func (r *Reconciler) cephRetryMax() time.Duration {
	if r.CephRetryMax > 0 {
		return r.CephRetryMax
	}
	return DefaultOptions().CephRetryMax
}

// Reconcile runs the bootstrap steps that are not done yet. A bootstrapped
// mgr costs only cache reads: no ceph call and no API write.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	reconciles.Inc()
	d := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, d); err != nil {
		if apierrors.IsNotFound(err) {
			r.unreachable.Delete(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	id := contract.MgrID(d)
	if !contract.IsMgr(d) || id == "" {
		return ctrl.Result{}, nil
	}
	log := logf.FromContext(ctx).WithValues("mgr", id)
	ctx = logf.IntoContext(ctx, log)
	if g, ok := r.written.Load(d.UID); ok && d.Generation < g.(int64) {
		// Our own status writes bring no event (the predicate drops them),
		// and this request may stand for a pending retry: look again shortly.
		log.V(1).Info("cache behind our last status write; looking again shortly", "cached", d.Generation, "written", g)
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if contract.LeftAlone(d) {
		r.written.Delete(d.UID)
		r.lastGood.Delete(d.UID)
		return ctrl.Result{}, r.release(ctx, d)
	}
	if !r.seal.ready() {
		// The status cannot be told from a forgery yet (seal.go), and the
		// finalizer needs it too (which keys are ours). A deletion is not
		// held past --finalizer-timeout for it: the key is kept, and said so.
		if d.DeletionTimestamp != nil && time.Since(d.DeletionTimestamp.Time) >= r.FinalizerTimeout {
			return ctrl.Result{}, r.letGoUnverified(ctx, d, id)
		}
		log.V(1).Info("waiting for the status key")
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if d.DeletionTimestamp != nil {
		r.written.Delete(d.UID) // no status is written from here on
		r.lastGood.Delete(d.UID)
		return r.finalize(ctx, d, id)
	}
	if !controllerutil.ContainsFinalizer(d, contract.FinalizerCephxKey) {
		patch := client.MergeFrom(d.DeepCopy())
		controllerutil.AddFinalizer(d, contract.FinalizerCephxKey)
		apiWrites.Inc()
		if err := r.Client.Patch(ctx, d, patch); err != nil {
			return ctrl.Result{}, err
		}
	}

	st := r.readStatus(d)
	next := st
	next.LastError, next.ObservedGeneration = "", d.Generation
	// The one place status and failure Events are written, whatever the
	// steps return.
	defer func() {
		err = r.record(ctx, d, next, err)
		res, err = r.unavailableRetry(req.NamespacedName, res, err)
	}()
	return r.bootstrap(ctx, &scope{r: r, d: d, id: id}, st, &next)
}

// bootstrap runs the steps in order, stopping at the first that is not done;
// it sets next (phase, modules, dashboard) and leaves writing it to record.
func (r *Reconciler) bootstrap(ctx context.Context, b *scope, st Status, next *Status) (ctrl.Result, error) {
	d, id := b.d, b.id
	// The namespace's mgrs: how many (the PDB) and what modules they ask for.
	ds := &appsv1.DeploymentList{}
	if err := r.Client.List(ctx, ds, client.InNamespace(d.Namespace), client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensureServices(ctx, d, id); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensurePDB(ctx, d, ds.Items); err != nil {
		return ctrl.Result{}, err
	}
	if err := b.ensureKeyring(ctx, st, next); err != nil {
		return ctrl.Result{}, err
	}
	if why := notChosen(d, r.ModuleChoices); why != "" {
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonModulesNotChosen, "EnableModule", "%s", why)
	}
	want, conflict := clusterModules(ds.Items, d.Namespace, r.Modules, r.ModuleChoices)
	if conflict != "" {
		// Reported, not fought over: nothing changes until the annotations agree.
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonModulesConflict, "EnableModule", "%s", conflict)
		next.Phase, next.LastError = PhaseError, conflict
		return ctrl.Result{}, nil
	}
	if st.Phase == PhaseReady && st.ObservedGeneration == d.Generation && slices.Equal(st.wanted(), sortedCopy(want)) && st.portsSet(d) {
		return ctrl.Result{}, nil // at rest
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(d.Namespace),
		client.MatchingLabels{contract.LabelApp: contract.AppName, contract.LabelMgrID: id}); err != nil {
		return ctrl.Result{}, err
	}
	if !podReady(pods.Items) {
		next.Phase = PhaseWaitingForPod
		return ctrl.Result{}, nil // the pod watch brings us back
	}
	if len(want) == 0 && len(st.Modules) == 0 {
		// No module wanted, none to turn off: nothing to ask Ceph.
		next.Phase, next.Modules, next.Unavailable, next.Dashboard = PhaseReady, nil, nil, false
		return ctrl.Result{}, nil
	}
	conn, err := b.conn(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The modules are the cluster's: one mgr of a namespace reads the mgr
	// map and runs its plan at a time, so two never turn a module on or off twice.
	// Waiting is bounded: while another mgr's plan runs (its retries may take
	// ModuleTimeout), this one comes back later and frees its worker.
	lockCtx, cancel := context.WithTimeout(ctx, time.Second)
	unlock, err := r.lockCluster(lockCtx, d.Namespace)
	cancel()
	if err != nil {
		logf.FromContext(ctx).V(1).Info("another mgr of the cluster is running the module plan; looking again shortly")
		return ctrl.Result{RequeueAfter: max(r.RetryInterval, time.Second)}, nil
	}
	defer unlock()
	mgrMap, err := r.Ceph.MgrDump(ctx, conn)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !mgrMap.Available || !mgrMap.Knows(id) {
		next.Phase = PhaseWaitingForMgr
		return ctrl.Result{RequeueAfter: r.WaitForMgr}, nil
	}
	if err := b.enableModules(ctx, conn, mgrMap, want, st, next); err != nil {
		return ctrl.Result{}, err
	}
	next.Phase = PhaseReady
	return ctrl.Result{}, nil
}

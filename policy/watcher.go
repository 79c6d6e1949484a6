// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package policy

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

// RBAC: every replica reads the MgrPolicy and writes its own status entry.
//
// +kubebuilder:rbac:groups=mgr.ceph.rook.io,resources=mgrpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=mgr.ceph.rook.io,resources=mgrpolicies/status,verbs=patch

// Event reasons on a MgrPolicy (written by the Watcher that writes conditions).
const (
	ReasonApplied  = "PolicyApplied"
	ReasonRejected = "PolicyRejected"
	ReasonDeleted  = "PolicyDeleted"
)

// Watcher puts the MgrPolicy named Name in force in Store whenever it
// changes, on every replica (no leader election: each replica enforces what
// it read). A spec that fails validation, or the MgrPolicy deleted, leaves
// the last good policy in force and says so: the replica's status.byPod
// entry, the metrics, and, where Conditions is set, the Accepted condition
// and an Event.
type Watcher struct {
	// Client reads from the manager's cache and applies the status.
	Client client.Client
	// Name of the MgrPolicy.
	Name  string
	Store *Store
	// Operation is what this replica does with the policy (webhook,
	// controller); Pod is its Pod's name. Without Pod no status.byPod entry
	// is written (local runs).
	Operation, Pod string
	// Conditions: this Watcher also writes the status's conditions,
	// observedGeneration and policyHash, and the Events (the controller).
	Conditions bool
	Recorder   events.EventRecorder

	mu     sync.Mutex
	loaded bool // read once at least (found or not)
	// evented is the generation last Evented, as applied or refused.
	evented int64
}

// SetupWithManager watches the MgrPolicy, adds a readiness check that
// holds until it has been read once (so a replica never serves a built-in
// policy while a MgrPolicy exists), and withdraws the replica's status.byPod
// entry when it stops.
func (w *Watcher) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.AddReadyzCheck("policy", w.ready); err != nil {
		return err
	}
	if w.Pod != "" {
		if err := mgr.Add(withdrawal{w}); err != nil {
			return err
		}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("mgrpolicy-"+w.Operation).
		// Status writes (every replica's) change no generation: no reconcile.
		For(&v1alpha1.MgrPolicy{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == w.Name }),
			predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false), MaxConcurrentReconciles: 1}).
		Complete(w)
}

func (w *Watcher) ready(req *http.Request) error {
	w.mu.Lock()
	loaded := w.loaded
	w.mu.Unlock()
	if loaded {
		return nil
	}
	_, err := w.Reconcile(req.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Name: w.Name}})
	w.mu.Lock()
	loaded = w.loaded
	w.mu.Unlock()
	if !loaded {
		return fmt.Errorf("MgrPolicy %s not read yet: %w", w.Name, err)
	}
	return nil
}

// Reconcile reads the MgrPolicy and puts it in force when valid.
func (w *Watcher) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	log := ctrl.LoggerFrom(ctx).WithValues("mgrpolicy", w.Name)
	var mp v1alpha1.MgrPolicy
	err := w.Client.Get(ctx, types.NamespacedName{Name: w.Name}, &mp)
	if apierrors.IsNotFound(err) {
		in := w.Store.InForce()
		if w.Conditions && w.Recorder != nil && w.evented != 0 {
			// Said once, on the object that is gone: its last good spec stays.
			gone := &v1alpha1.MgrPolicy{ObjectMeta: metav1.ObjectMeta{Name: w.Name}}
			w.Recorder.Eventf(gone, nil, corev1.EventTypeWarning, ReasonDeleted, "Delete",
				"MgrPolicy %s deleted: generation %d (policy %s) stays in force until the replicas restart", w.Name, in.Generation, in.Hash)
		}
		w.loaded, w.evented = true, 0 // one created again starts at generation 1
		recordState(w.Operation, stateMissing, in.Generation)
		log.Info("no MgrPolicy: the policy in force stays", "source", in.Source, "hash", in.Hash)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	w.loaded = true
	p, errs := mutate.PolicyFromSpec(&mp.Spec, field.NewPath("spec"))
	if len(errs) > 0 {
		recordState(w.Operation, stateInvalid, w.Store.InForce().Generation)
		reloads.WithLabelValues(w.Operation, "rejected").Inc()
		log.Error(errs.ToAggregate(), "MgrPolicy refused: the last good policy stays in force", "generation", mp.Generation, "inForce", w.Store.InForce().Source)
		return ctrl.Result{}, w.report(ctx, &mp, errs)
	}
	in := InForce{Policy: p, Hash: p.Hash(), Source: "MgrPolicy " + w.Name, Generation: mp.Generation}
	if w.Store.set(in) {
		reloads.WithLabelValues(w.Operation, "applied").Inc()
		log.Info("MgrPolicy in force", "generation", mp.Generation, "hash", in.Hash)
	}
	recordState(w.Operation, stateCurrent, mp.Generation)
	return ctrl.Result{}, w.report(ctx, &mp, nil)
}

// report writes this replica's status entry and, for the Watcher that writes
// conditions, the Accepted condition and an Event on a change of verdict.
func (w *Watcher) report(ctx context.Context, mp *v1alpha1.MgrPolicy, errs field.ErrorList) error {
	in := w.Store.InForce()
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	if w.Conditions {
		w.event(mp, in, msgs)
	}
	if w.Pod != "" {
		entry := map[string]any{
			"id": w.Pod, "operations": []string{w.Operation},
			"observedGeneration": mp.Generation, "enforcedGeneration": in.Generation, "policyHash": in.Hash,
		}
		if len(msgs) > 0 {
			entry["errors"] = msgs
		}
		if err := w.apply(ctx, map[string]any{"byPod": []any{entry}}, w.fieldManager()); err != nil {
			return err
		}
	}
	if !w.Conditions {
		return nil
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionAccepted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonValid,
		Message: fmt.Sprintf("generation %d is in force (policy %s)", mp.Generation, in.Hash), ObservedGeneration: mp.Generation}
	if len(msgs) > 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonInvalid
		cond.Message = fmt.Sprintf("generation %d refused, generation %d (policy %s) stays in force: %s", mp.Generation, in.Generation, in.Hash, strings.Join(msgs, "; "))
	}
	// The transition time moves only when the verdict does.
	cond.LastTransitionTime = metav1.Now()
	if old := meta.FindStatusCondition(mp.Status.Conditions, cond.Type); old != nil && old.Status == cond.Status {
		cond.LastTransitionTime = old.LastTransitionTime
	}
	// One field manager for the controller's replicas, none of them the
	// Pod's: a replica that withdraws its entry leaves these.
	return w.apply(ctx, map[string]any{"observedGeneration": mp.Generation, "policyHash": in.Hash, "conditions": []metav1.Condition{cond}}, "mgr-"+w.Operation)
}

// apply writes status fields of the MgrPolicy by server-side apply as
// manager: what manager wrote before and omits now is removed.
func (w *Watcher) apply(ctx context.Context, status map[string]any, manager string) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "MgrPolicy",
		"metadata": map[string]any{"name": w.Name}, "status": status}}
	return w.Client.Status().Patch(ctx, u, client.Apply, client.FieldOwner(manager), client.ForceOwnership)
}

// fieldManager owns this replica's entry: one per Pod, so that each
// replica's entry is its own to write and to withdraw.
func (w *Watcher) fieldManager() string { return "mgr-" + w.Operation + "/" + w.Pod }

func (w *Watcher) event(mp *v1alpha1.MgrPolicy, in InForce, msgs []string) {
	if w.Recorder == nil || w.evented == mp.Generation {
		return
	}
	w.evented = mp.Generation
	if len(msgs) > 0 {
		w.Recorder.Eventf(mp, nil, corev1.EventTypeWarning, ReasonRejected, "Validate",
			"generation %d refused, generation %d (policy %s) stays in force: %s", mp.Generation, in.Generation, in.Hash, strings.Join(msgs, "; "))
		return
	}
	w.Recorder.Eventf(mp, nil, corev1.EventTypeNormal, ReasonApplied, "Apply", "generation %d in force (policy %s)", mp.Generation, in.Hash)
}

// withdrawal removes the replica's status.byPod entry when the manager
// stops (a rollout's replaced Pods): applying a status without it, as the
// entry's only field manager, drops it. A replica killed outright leaves its
// entry behind.
type withdrawal struct{ w *Watcher }

// NeedLeaderElection: every replica has an entry.
func (withdrawal) NeedLeaderElection() bool { return false }

func (r withdrawal) Start(ctx context.Context) error {
	<-ctx.Done()
	w := r.w
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	if err := w.apply(ctx, map[string]any{"byPod": []any{}}, w.fieldManager()); client.IgnoreNotFound(err) != nil {
		ctrl.LoggerFrom(ctx).Info("could not withdraw this replica's MgrPolicy status entry", "pod", w.Pod, "error", err.Error())
	}
	return nil
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// decideKey decides which of a deleted mgr's cephx keys go with it (into
// s.removeKeys): none while something else uses the mgr's id, and none the
// controller did not create (its sealed status has no record of that). An
// Event says which stay, and what to do by hand.
func (r *Reconciler) decideKey(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	entity := "mgr." + s.id
	user, err := r.keyUser(ctx, s.d, s.id)
	switch {
	case err != nil && (apierrors.IsForbidden(err) || time.Now().After(s.d.DeletionTimestamp.Add(r.FinalizerTimeout))):
		// Whether anything else uses the key cannot be told: the controller's
		// rights in the namespace are gone (deleting a Ceph namespace deletes
		// its RoleBinding there first) or the API server did not answer in
		// time. The keys stay and the Deployment goes: a deletion is never
		// held past the timeout, nor forever by a lost binding.
		r.Recorder.Eventf(s.d, nil, corev1.EventTypeWarning, ReasonKeyKept, "Delete",
			"cephx key %s kept: cannot tell whether anything else uses it (%v); if nothing does, remove it by hand: ceph auth rm %s", entity, err, entity)
		return ctrl.Result{}, false, nil
	case err != nil:
		return ctrl.Result{}, true, err
	case user != "":
		// Not ours to remove: another Deployment runs this mgr, or holds its keyring.
		r.Recorder.Eventf(s.d, nil, corev1.EventTypeNormal, ReasonKeyKept, "Delete", "cephx key %s kept: %s still uses it", entity, user)
		return ctrl.Result{}, false, nil
	}
	if s.prev.KeyOwned {
		s.removeKeys = append(s.removeKeys, entity)
	} else {
		r.Recorder.Eventf(s.d, nil, corev1.EventTypeNormal, ReasonKeyKept, "Delete",
			"cephx key %s not removed: this controller did not create it (its sealed status has no record of it); if it exists and nothing uses it, remove it by hand: ceph auth rm %s", entity, entity)
	}
	if s.prev.ServerAddrKeyOwned {
		s.removeKeys = append(s.removeKeys, contract.ServerAddrEntity(s.id))
	}
	return ctrl.Result{}, false, nil
}

// removeKey removes the cephx keys decideKey chose, giving up after
// FinalizerTimeout so that a lost cluster never holds the deletion hostage
// (Rook left keys behind, rook#9860: we say so instead). Removing a key
// already gone is no error, so a retry repeats the whole list.
func (r *Reconciler) removeKey(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	if len(s.removeKeys) == 0 {
		return ctrl.Result{}, false, nil
	}
	d, entities := s.d, strings.Join(s.removeKeys, " and ")
	conn, err := r.conn(ctx, s)
	for _, entity := range s.removeKeys {
		if err != nil {
			break
		}
		err = r.Ceph.RemoveKey(ctx, conn, entity)
	}
	if err == nil {
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonKeyRemoved, "Delete", "cephx key %s removed from Ceph", entities)
		return ctrl.Result{}, false, nil
	}
	if remaining := time.Until(d.DeletionTimestamp.Add(r.FinalizerTimeout)); remaining > 0 {
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonCephUnavailable, "Delete",
			"cannot remove cephx key %s yet (%v); retrying until %s", entities, err, d.DeletionTimestamp.Add(r.FinalizerTimeout).UTC().Format(time.RFC3339))
		// Retry on the cluster's clock while it does not answer, after the
		// longest wait when it answered no; never past the deadline.
		wait := r.Clusters.RetryMax()
		if ceph.IsUnavailable(err) {
			wait = max(r.Clusters.RetryAfter(d.Namespace), time.Second)
		}
		return ctrl.Result{RequeueAfter: min(remaining, wait)}, true, nil
	}
	r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonKeyRemovalAbandoned, "Delete",
		"gave up removing cephx key %s after %s (%v); remove it by hand: ceph auth rm %s", entities, r.FinalizerTimeout, err, strings.Join(s.removeKeys, "; ceph auth rm "))
	return ctrl.Result{}, false, nil
}

// dropFinalizer lets the deletion of the mgr go on.
func (r *Reconciler) dropFinalizer(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	return ctrl.Result{}, false, r.removeFinalizer(ctx, s.d)
}

// letGoUnverified ends the deletion of a mgr whose status cannot be verified
// (the status key never loaded): whether its key is the controller's is
// unknown, so the key stays in Ceph and an Event names the command to run.
func (r *Reconciler) letGoUnverified(ctx context.Context, d *appsv1.Deployment, id string) error {
	if !controllerutil.ContainsFinalizer(d, contract.FinalizerCephxKey) {
		return nil
	}
	entity, serverAddr := "mgr."+id, contract.ServerAddrEntity(id)
	r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonKeyRemovalAbandoned, "Delete",
		"gave up removing cephx keys %s and %s (if it exists) after %s: the controller cannot load Secret %s to tell whether they are its own (see its log); remove them by hand if nothing uses them: ceph auth rm %s; ceph auth rm %s",
		entity, serverAddr, r.FinalizerTimeout, mgrstatus.KeySecretName, entity, serverAddr)
	return r.removeFinalizer(ctx, d)
}

func (r *Reconciler) removeFinalizer(ctx context.Context, d *appsv1.Deployment) error {
	if !controllerutil.ContainsFinalizer(d, contract.FinalizerCephxKey) {
		return nil
	}
	patch := client.MergeFrom(d.DeepCopy())
	controllerutil.RemoveFinalizer(d, contract.FinalizerCephxKey)
	apiWrites.Inc()
	return client.IgnoreNotFound(r.Client.Patch(ctx, d, patch))
}

// keyUser names what still uses the cephx key of mgr id besides the deleted
// Deployment d: another live Deployment of that mgr id in the namespace (ours,
// Rook's or anyone's), or a keyring Secret that another object controls. It
// reads from the API server, not the cache: a key removed in error cannot be
// given back.
func (r *Reconciler) keyUser(ctx context.Context, d *appsv1.Deployment, id string) (string, error) {
	list := &appsv1.DeploymentList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(d.Namespace), client.MatchingLabels{contract.LabelMgrID: id}); err != nil {
		return "", err
	}
	for _, other := range list.Items {
		if other.UID != d.UID && other.DeletionTimestamp == nil && contract.IsMgr(&other) {
			return "Deployment " + other.Name, nil
		}
	}
	s := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: contract.KeyringSecretName(id)}, s)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if ref := metav1.GetControllerOf(s); ref != nil && ref.UID != d.UID {
		return fmt.Sprintf("Secret %s (controlled by %s %s)", s.Name, ref.Kind, ref.Name), nil
	}
	return "", nil
}

// letGo lets go of a Deployment that is no longer ours to manage (opted out
// or owned by a Rook CephCluster): its finalizer goes, and its key, keyring
// and Services stay as they are.
func (r *Reconciler) letGo(ctx context.Context, d *appsv1.Deployment) error {
	if !controllerutil.ContainsFinalizer(d, contract.FinalizerCephxKey) {
		return nil
	}
	if err := r.removeFinalizer(ctx, d); err != nil {
		return err
	}
	r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonReleased, "Release",
		"no longer managed (label %s=false or a Rook CephCluster owner): finalizer removed; the cephx key, keyring Secret and Services are left as they are", contract.LabelManaged)
	return nil
}

// notOwned is the error for an object that carries our name for mgr d but is
// controlled by something else (or nothing): the controller neither adopts
// nor changes it.
func notOwned(d *appsv1.Deployment, kind string, o metav1.Object) error {
	owner := "no controller"
	if ref := metav1.GetControllerOf(o); ref != nil {
		owner = fmt.Sprintf("%s %s", ref.Kind, ref.Name)
	}
	return fmt.Errorf("%w: %s %s belongs to %s, not to Deployment %s; the controller neither adopts nor changes it: delete it if it is stale, or delete this Deployment if it duplicates mgr %q",
		errNotOwned, kind, o.GetName(), owner, d.Name, contract.MgrID(d))
}

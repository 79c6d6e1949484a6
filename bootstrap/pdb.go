// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// PDBName is the cluster's PodDisruptionBudget for its mgrs (Rook's name).
const PDBName = contract.AppName + "-pdb"

// desiredPDB lets one mgr pod of the cluster be evicted at a time.
func desiredPDB(namespace string) *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: PDBName, Namespace: namespace, Labels: clusterLabels(namespace)},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &one,
			Selector:       &metav1.LabelSelector{MatchLabels: clusterLabels(namespace)},
		},
	}
}

// wantPDB: a budget only protects a cluster with two or more mgrs; with one,
// it would block every node drain (rook#2128, #11875).
func wantPDB(mgrs int) bool { return mgrs >= 2 }

// ensurePDB keeps the cluster's PodDisruptionBudget while the namespace runs
// two or more managed mgrs, and
// removes it below that. Like the Services, every mgr owns it; one that
// another object controls (Rook's operator makes one of this name) or that
// no mgr owns is neither changed nor deleted.
func (r *Reconciler) ensurePDB(ctx context.Context, s *scope) error {
	d, ds := s.d, s.mgrs
	want := desiredPDB(d.Namespace)
	have := &policyv1.PodDisruptionBudget{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), have)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	exists := err == nil
	if exists && (metav1.GetControllerOf(have) != nil || !ownedByAMgr(have, ds)) {
		return nil // not ours
	}
	switch {
	case !wantPDB(len(contract.ClusterMgrs(ds)[d.Namespace])):
		if !exists {
			return nil
		}
		apiWrites.Inc()
		if err := r.Client.Delete(ctx, have, client.Preconditions{UID: &have.UID}); client.IgnoreNotFound(err) != nil {
			return err
		}
		r.Recorder.Eventf(d, have, corev1.EventTypeNormal, ReasonPodDisruptionBudget, "Delete", "PodDisruptionBudget %s removed: the cluster runs one mgr", PDBName)
	case !exists:
		if err := controllerutil.SetOwnerReference(d, want, r.Client.Scheme()); err != nil {
			return err
		}
		apiWrites.Inc()
		if err := r.Client.Create(ctx, want); client.IgnoreAlreadyExists(err) != nil {
			return err
		}
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonPodDisruptionBudget, "Create", "PodDisruptionBudget %s created: one of the cluster's mgrs may be disrupted at a time", PDBName)
	case !isOwner(have, d) || pdbDrifted(have, want):
		// A strategic merge adds our owner reference by uid: the namespace's mgrs
		// add theirs at once without conflicts (and without a lost update).
		patch := client.StrategicMergeFrom(have.DeepCopy())
		if err := controllerutil.SetOwnerReference(d, have, r.Client.Scheme()); err != nil {
			return err
		}
		have.Spec.MaxUnavailable, have.Spec.MinAvailable, have.Spec.Selector = want.Spec.MaxUnavailable, nil, want.Spec.Selector
		apiWrites.Inc()
		return r.Client.Patch(ctx, have, patch)
	}
	return nil
}

func pdbDrifted(have, want *policyv1.PodDisruptionBudget) bool {
	return have.Spec.MinAvailable != nil || have.Spec.MaxUnavailable == nil || *have.Spec.MaxUnavailable != *want.Spec.MaxUnavailable ||
		have.Spec.Selector == nil || len(have.Spec.Selector.MatchExpressions) > 0 ||
		!maps.Equal(have.Spec.Selector.MatchLabels, want.Spec.Selector.MatchLabels)
}

// ownedByAMgr reports whether one of the mgr Deployments ds owns o.
func ownedByAMgr(o metav1.Object, ds []appsv1.Deployment) bool {
	for i := range ds {
		if isOwner(o, &ds[i]) {
			return true
		}
	}
	return false
}

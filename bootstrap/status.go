// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/cluster"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
)

// writeStatus writes the outcome of a reconcile: the status (only when it
// changed, or with change, a change of the Deployment it records) and, for a failure, its lastError, phase and Warning Event. It
// returns err for the workqueue's exponential backoff (never a hot loop), or
// the status write's error when the steps succeeded.
func (r *Reconciler) writeStatus(ctx context.Context, d *appsv1.Deployment, st mgrstatus.Status, change func(*appsv1.Deployment), err error) error {
	if err == nil {
		return r.status.SaveWith(ctx, d, st, change)
	}
	st.LastError = err.Error()
	switch {
	case errors.Is(err, cluster.ErrMissing):
		st.Phase = mgrstatus.PhaseError
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonCephClusterMissing, "Bootstrap", "%v", err)
	case errors.Is(err, errNotOwned):
		st.Phase = mgrstatus.PhaseError
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonNotOwned, "Bootstrap", "%v", err)
	case errors.Is(err, cluster.ErrMonHostRefused):
		st.Phase = mgrstatus.PhaseError
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonMonHostRefused, "Bootstrap", "%v", err)
	case errors.Is(err, errKeyNotOurs):
		st.Phase = mgrstatus.PhaseError
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonKeyNotOwned, "Bootstrap", "%v", err)
	case errors.Is(err, errDashboardPassword):
		st.Phase = mgrstatus.PhaseError
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonDashboardPasswordInvalid, "ConfigureDashboard", "%v", err)
	case ceph.IsUnavailable(err):
		st.Phase = mgrstatus.PhaseCephUnavailable
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonCephUnavailable, "Bootstrap", "Ceph cluster %s did not answer; retrying with backoff: %v", d.Namespace, err)
	default:
		st.Phase = mgrstatus.PhaseError
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonBootstrapFailed, "Bootstrap", "%v", err)
	}
	if serr := r.status.Save(ctx, d, st); serr != nil {
		logf.FromContext(ctx).Error(serr, "saving status")
	}
	return err
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/cluster"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// Phase is where a mgr's bootstrap stands.
type Phase string

// Phases, in the order a mgr passes them.
const (
	PhaseWaitingForPod   Phase = "WaitingForPod"   // keyring and Services done; the pod is not Ready
	PhaseWaitingForMgr   Phase = "WaitingForMgr"   // the pod is Ready; Ceph does not list the mgr yet
	PhaseReady           Phase = "Ready"           // modules enabled and configured
	PhaseCephUnavailable Phase = "CephUnavailable" // the cluster did not answer; retrying with backoff
	PhaseError           Phase = "Error"           // a step failed; see lastError
)

// Status is the machine-readable status the controller keeps in the
// mgr.ceph.rook.io/bootstrap-status annotation of the Deployment.
type Status struct {
	Phase Phase `json:"phase"`
	// ObservedGeneration is the Deployment generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration"`
	// Modules are the wanted modules found on or enabled (always-on included).
	Modules []string `json:"modules,omitempty"`
	// Unavailable are wanted modules this Ceph release lacks or cannot run.
	Unavailable []string `json:"unavailableModules,omitempty"`
	// Dashboard is true once the dashboard has a certificate, its port and its admin user.
	Dashboard bool `json:"dashboard,omitempty"`
	// Backend is the orchestrator backend set (once rook is on).
	Backend string `json:"orchestratorBackend,omitempty"`
	// MetricsPort and DashboardPort are this mgr's module ports as set in
	// Ceph (its container's http-metrics and dashboard ports).
	MetricsPort   int32 `json:"metricsPort,omitempty"`
	DashboardPort int32 `json:"dashboardPort,omitempty"`
	// CephVersion is the release the mgr reported when its modules were planned.
	CephVersion string `json:"cephVersion,omitempty"`
	// KeyOwned records that the controller created mgr.<id>'s cephx key (or
	// adopted it, where the policy allows): only then may it re-cap the key
	// or remove it with the Deployment.
	KeyOwned bool `json:"keyOwned,omitempty"`
	// ServerAddrKeyOwned is KeyOwned for the key of the mgr's server_addr
	// init containers (contract.ServerAddrEntity).
	ServerAddrKeyOwned bool `json:"serverAddrKeyOwned,omitempty"`
	// LastError is the last failure, without any key material.
	LastError string `json:"lastError,omitempty"`
	// Seal proves the controller wrote this status (see seal.go); a status
	// without a valid one is not the controller's and is ignored.
	Seal string `json:"seal,omitempty"`
}

// StatusOf decodes the status the controller keeps on d: the zero Status
// when there is none, and an error naming the annotation when it is garbled.
// Every reader (the controller, demo, tests, benchmarks) decodes it here.
func StatusOf(d *appsv1.Deployment) (Status, error) {
	var s Status
	v := d.Annotations[contract.AnnotationBootstrapStatus]
	if v == "" {
		return s, nil
	}
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return Status{}, fmt.Errorf("annotation %s of Deployment %s/%s: %w", contract.AnnotationBootstrapStatus, d.Namespace, d.Name, err)
	}
	return s, nil
}

// sealedStatus reports whether s, read from d, is a status the controller
// wrote: its seal verifies and, while it remembers one, it is the last it
// wrote. Before the key is loaded nothing is.
func (r *Reconciler) sealedStatus(d *appsv1.Deployment, s Status) bool {
	if !r.seal.ready() || !r.seal.verify(d.UID, s) {
		return false
	}
	last, remembered := r.lastGood.Load(d.UID)
	return !remembered || s.encode() == last.(Status).encode()
}

// readStatus is StatusOf for the controller: the status it may act on. A
// status it did not seal (garbled, written by someone else, or not the one
// it last wrote) is ignored, with an Event: the last status the controller
// wrote while running, or none, which makes it redo (idempotently) what a new
// mgr needs, and never disable a module.
func (r *Reconciler) readStatus(d *appsv1.Deployment) Status {
	raw := d.Annotations[contract.AnnotationBootstrapStatus]
	var last Status
	lastV, remembered := r.lastGood.Load(d.UID)
	if remembered {
		last = lastV.(Status)
	}
	if raw == "" {
		if remembered {
			return last
		}
		return Status{}
	}
	s, err := StatusOf(d)
	switch {
	case err == nil && r.sealedStatus(d, s):
		r.lastGood.Store(d.UID, s)
		return s
	case remembered:
		s = last
	default:
		s = Status{}
	}
	r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonStatusForged, "Bootstrap",
		"annotation %s was not written by the controller (its seal does not verify, or it is not the status last written): ignored and rewritten; only the controller writes it",
		contract.AnnotationBootstrapStatus)
	return s
}

func (s Status) encode() string {
	b, _ := json.Marshal(s) // plain fields always marshal
	return string(b)
}

// writeStatus writes the outcome of a reconcile: the status (only when it
// changed) and, for a failure, its lastError, phase and Warning Event. It
// returns err for the workqueue's exponential backoff (never a hot loop), or
// the status write's error when the steps succeeded.
func (r *Reconciler) writeStatus(ctx context.Context, d *appsv1.Deployment, st Status, err error) error {
	if err == nil {
		return r.saveStatus(ctx, d, st)
	}
	st.LastError = err.Error()
	switch {
	case errors.Is(err, cluster.ErrMissing):
		st.Phase = PhaseError
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonCephClusterMissing, "Bootstrap", "%v", err)
	case errors.Is(err, errNotOwned):
		st.Phase = PhaseError
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonNotOwned, "Bootstrap", "%v", err)
	case errors.Is(err, cluster.ErrMonHostRefused):
		st.Phase = PhaseError
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonMonHostRefused, "Bootstrap", "%v", err)
	case errors.Is(err, errKeyNotOurs):
		st.Phase = PhaseError
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonKeyNotOwned, "Bootstrap", "%v", err)
	case errors.Is(err, errDashboardPassword):
		st.Phase = PhaseError
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonDashboardPasswordInvalid, "ConfigureDashboard", "%v", err)
	case ceph.IsUnavailable(err):
		st.Phase = PhaseCephUnavailable
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonCephUnavailable, "Bootstrap", "Ceph cluster %s did not answer; retrying with backoff: %v", d.Namespace, err)
	default:
		st.Phase = PhaseError
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonBootstrapFailed, "Bootstrap", "%v", err)
	}
	if serr := r.saveStatus(ctx, d, st); serr != nil {
		logf.FromContext(ctx).Error(serr, "saving status")
	}
	return err
}

// saveStatus patches the status annotation only when it changed.
//
// The API server bumps a Deployment's generation on every annotation change
// (annotations are copied to ReplicaSets), so writing the status moves the
// generation from g to g+1. The patch carries the resourceVersion it was
// computed from, so g+1 is exactly the generation written, and recording it as
// observed keeps the next reconcile at rest instead of chasing its own writes.
func (r *Reconciler) saveStatus(ctx context.Context, d *appsv1.Deployment, st Status) error {
	st.Seal = r.seal.seal(d.UID, st)
	if d.Annotations[contract.AnnotationBootstrapStatus] == st.encode() {
		return nil
	}
	observed := d.Generation
	cur := d
	for attempt := 0; ; attempt++ {
		if cur.Generation != observed {
			return nil // the spec changed while we worked: its own reconcile follows
		}
		write := st
		if write.ObservedGeneration == observed {
			write.ObservedGeneration++
		}
		write.Seal = r.seal.seal(d.UID, write)
		patch := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[contract.AnnotationBootstrapStatus] = write.encode()
		apiWrites.Inc()
		err := r.Client.Patch(ctx, cur, patch)
		if err == nil {
			r.written.Store(cur.UID, cur.Generation)
			r.lastGood.Store(cur.UID, write)
			return nil
		}
		// Status writes of the deployment controller move the resourceVersion
		// during a long module step: read again rather than redo the step.
		if !apierrors.IsConflict(err) || attempt == 4 {
			return err
		}
		fresh := &appsv1.Deployment{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(d), fresh); err != nil {
			return err
		}
		cur = fresh
	}
}

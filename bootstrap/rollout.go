// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/rollout"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// rolloutPoll is how often a held mgr looks at its cluster again: the
// standbys' rollouts (their pods and the mgr map) bring it no event.
const rolloutPoll = 2 * time.Second

// rolloutMemory is what the rollouts remember between reconciles: when each
// held mgr (by UID) was first seen held at its generation (an active mgr is
// failed over only once its hold has settled, rollout.Settle), and per
// namespace the active daemon (gid) last failed over (a mgr map read before
// Ceph promoted a standby never fails it over twice).
type rolloutMemory struct {
	mu         sync.Mutex
	heldSince  map[types.UID]holdSeen
	failedOver map[string]uint64
}

type holdSeen struct {
	generation int64
	at         time.Time
}

// heldFor is how long d has been seen held at its generation (from now, if
// never).
func (m *rolloutMemory) heldFor(d *appsv1.Deployment, now time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.heldSince[d.UID]
	if !ok || s.generation != d.Generation {
		s = holdSeen{generation: d.Generation, at: now}
		if m.heldSince == nil {
			m.heldSince = map[types.UID]holdSeen{}
		}
		m.heldSince[d.UID] = s
	}
	return now.Sub(s.at)
}

// released forgets the hold of uid.
func (m *rolloutMemory) released(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.heldSince, uid)
}

func (m *rolloutMemory) failedOverIn(ns string) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failedOver[ns]
}

func (m *rolloutMemory) setFailedOver(ns string, gid uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failedOver == nil {
		m.failedOver = map[string]uint64{}
	}
	m.failedOver[ns] = gid
}

// heldOf is mgr d as the rollout sees it: a hold on a mgr the policy exempts
// is none. The webhook does not judge an exempt mgr's writes, so nothing
// strips a hold mark its editor wrote there, and an editor's mark must never
// make the controller fail a mgr over.
func (r *Reconciler) heldOf(d *appsv1.Deployment) rollout.Mgr {
	g := rollout.MgrOf(d)
	if g.Held && r.Policy != nil && r.Policy.Current().Exempts(d.Namespace, d.Name) {
		g.Held = false
	}
	return g
}

// rollOut ends the reconcile of a mgr the webhook held (mutate.HoldRollout)
// with the cluster's next rollout step (bootstrap/rollout.Plan), taken only
// when it is this mgr's: its release, or its failover. Every held mgr of
// the cluster plans the same step from the same facts, so no two
// reconciles act for one cluster at once. A mgr not held costs nothing.
func (r *Reconciler) rollOut(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	me := r.heldOf(s.d)
	if !me.Held {
		r.rollouts.released(s.d.UID)
		s.next.Rollout = ""
		return ctrl.Result{}, false, nil
	}
	mgrs := make([]rollout.Mgr, 0, len(s.mgrs))
	for i := range s.mgrs {
		if contract.MgrID(&s.mgrs[i]) != "" && s.mgrs[i].DeletionTimestamp == nil {
			g := r.heldOf(&s.mgrs[i])
			if s.mgrs[i].UID == s.d.UID {
				g.HeldFor = r.rollouts.heldFor(s.d, time.Now())
			}
			mgrs = append(mgrs, g)
		}
	}
	var m rollout.Map
	if !me.Current {
		// Only a change of its pods needs the mgr map (step 1 of the plan
		// releases the others without a ceph call).
		conn, err := r.conn(ctx, s)
		if err != nil {
			return ctrl.Result{}, true, err
		}
		mm, err := r.Ceph.MgrDump(ctx, conn)
		if err != nil {
			return ctrl.Result{}, true, err
		}
		m = rollout.Map{Available: mm.Available, Active: mm.ActiveName, ActiveGID: mm.ActiveGID}
		for _, sb := range mm.Standbys {
			m.Standbys = append(m.Standbys, sb.Name)
		}
	}
	step := rollout.Plan(mgrs, m, r.rollouts.failedOverIn(s.d.Namespace))
	switch {
	case step.Action == rollout.Release && step.ID == s.id:
		if err := r.releaseHold(ctx, s); apierrors.IsConflict(err) {
			// Changed since read (a newer template, or our cache behind):
			// judged afresh shortly, not a failure.
			return ctrl.Result{RequeueAfter: time.Second}, true, nil
		} else if err != nil {
			return ctrl.Result{}, true, err
		}
		r.rollouts.released(s.d.UID)
		s.next.Rollout = ""
		r.Recorder.Eventf(s.d, nil, corev1.EventTypeNormal, ReasonRolloutReleased, "RollOut", "resumed mgr %s's rollout: %s", s.id, step.Why)
		return ctrl.Result{}, true, nil
	case step.Action == rollout.Failover && step.ID == s.id:
		conn, err := r.conn(ctx, s)
		if err != nil {
			return ctrl.Result{}, true, err
		}
		// Remembered first: a failover that happens is never repeated.
		r.rollouts.setFailedOver(s.d.Namespace, m.ActiveGID)
		if _, err := r.Ceph.Run(ctx, conn, ceph.Command{Name: "mgr fail", Kind: ceph.Write, Args: []string{"mgr", "fail", s.id}}); err != nil {
			r.rollouts.setFailedOver(s.d.Namespace, 0)
			return ctrl.Result{}, true, err
		}
		s.next.Rollout = fmt.Sprintf("failed over to a standby (%s); resumed once another mgr is active", step.Why)
		r.Recorder.Eventf(s.d, nil, corev1.EventTypeNormal, ReasonRolloutFailedOver, "RollOut",
			"failed mgr %s over to a standby before its pod rolls (%s): one change of active mgr for this rollout", s.id, step.Why)
		return ctrl.Result{RequeueAfter: rolloutPoll}, true, nil
	}
	s.next.Rollout = "held for a standby-first rollout: " + step.Why
	if step.Action == rollout.Stall {
		s.next.Rollout = "stalled: " + step.Why + "; this mgr keeps its running pod until then"
		if !strings.HasPrefix(s.prev.Rollout, "stalled: ") {
			r.Recorder.Eventf(s.d, nil, corev1.EventTypeWarning, ReasonRolloutStalled, "RollOut",
				"mgr %s's rollout is held: %s. It keeps its running pod; fix that mgr's rollout (or `kubectl rollout resume` this one to roll it anyway)", s.id, step.Why)
		}
	}
	return ctrl.Result{RequeueAfter: rolloutPoll}, true, nil
}

// releaseHold resumes the held mgr and drops the hold in one write, the
// only change of spec the controller makes (mgr-bootstrap-confinement). The
// write is refused if the mgr changed since it was read: a new template is
// judged (and held) anew by the webhook, not released with the old.
func (r *Reconciler) releaseHold(ctx context.Context, s *scope) error {
	patch := client.MergeFromWithOptions(s.d.DeepCopy(), client.MergeFromWithOptimisticLock{})
	s.d.Spec.Paused = false
	delete(s.d.Annotations, contract.AnnotationRolloutHold)
	apiWrites.Inc()
	return r.Client.Patch(ctx, s.d, patch)
}

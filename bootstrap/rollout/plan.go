// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package rollout decides how a Ceph cluster's mgrs roll when their pod
// templates change: standbys first, one at a time, then one `ceph mgr fail`
// of the active mgr, then the old active. The webhook holds each such
// change (mutate.HoldRollout: the Deployment paused, annotation
// contract.AnnotationRolloutHold); the controller releases the holds in
// this order. Why a paused Deployment: the spec stays as its writer wrote
// it (GitOps sees no drift), the deployment controller keeps its status,
// and `kubectl rollout resume` is everyone's escape hatch.
package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// Mgr is one mgr Deployment of a cluster, as the rollout sees it.
type Mgr struct {
	ID string
	// Replicas is spec.replicas (0: scaled down, in no mgr map).
	Replicas int32
	// Held: paused by the webhook's hold.
	Held bool
	// Current: every pod runs the Deployment's template, observed at its
	// generation (a held change that does not change the pods is current).
	Current bool
	// Ready: all its pods are Ready, and no other pod runs.
	Ready bool
	// Stalled is why its rollout stopped (the deployment controller's
	// ProgressDeadlineExceeded), "" while it progresses.
	Stalled string
	// HeldFor is how long the controller has seen this hold (of this
	// generation); zero when unknown.
	HeldFor time.Duration
}

// Settle is how long a held active mgr waits before it is failed over: a
// change of a cluster's mgrs arrives as one write per Deployment (kubectl,
// a GitOps sync), and the active one may come first; its standbys' holds
// arrive within it, and are then released before it.
const Settle = 10 * time.Second

// MgrOf reads d as the rollout sees it.
func MgrOf(d *appsv1.Deployment) Mgr {
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	st := d.Status
	m := Mgr{
		ID:       contract.MgrID(d),
		Replicas: replicas,
		Held:     d.Spec.Paused && d.Annotations[contract.AnnotationRolloutHold] == contract.RolloutHoldStandbysFirst,
		Current:  st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == replicas,
		Ready:    st.ObservedGeneration >= d.Generation && st.ReadyReplicas == replicas && st.Replicas == replicas,
	}
	for _, c := range st.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			m.Stalled = c.Message
		}
	}
	return m
}

// Map is what the rollout needs of the cluster's mgr map.
type Map struct {
	Available bool
	Active    string
	// ActiveGID tells one run of the active daemon from the next.
	ActiveGID uint64
	Standbys  []string
}

func (m Map) knows(id string) bool { return m.Active == id || slices.Contains(m.Standbys, id) }

// Action is what a step does.
type Action string

// Actions.
const (
	Wait     Action = "Wait"     // nothing now; look again
	Release  Action = "Release"  // resume the held mgr ID
	Failover Action = "Failover" // `ceph mgr fail` the active mgr ID, then release it
	Stall    Action = "Stall"    // as Wait, and the rollout has stopped: tell the user
)

// Step is the cluster's next rollout step.
type Step struct {
	Action Action
	// ID is the mgr released or failed over; for Wait and Stall, the mgr
	// waited for ("" for the cluster).
	ID string
	// Why says it, for status and Events.
	Why string
}

// Plan decides a cluster's next rollout step from its mgr Deployments and
// its mgr map; failedOver is the active daemon (gid) the controller already
// failed over, 0 for none. The order keeps a mgr available throughout and
// makes one change of active mgr per rollout:
//
//  1. A held change that changes no pod (the template the pods run) is
//     released at once: nothing restarts, nothing fails over.
//  2. With no mgr available there is nothing to keep available (and the
//     change may be what brings one back): the held mgrs are released.
//     Else nothing moves while a mgr that is not held is rolling (or its daemon has not joined the mgr map): one mgr
//     restarts at a time. A rollout past its progress deadline stalls the
//     cluster's rollout (the held active keeps its pod), and says so.
//  3. The held standbys are released, one at a time, by name.
//  4. Then the held active, held for Settle, is failed over once (a standby takes over at
//     once, where a mgr pod that merely stops leaves Ceph without an active
//     mgr for mon_mgr_beacon_grace) and, once another mgr is active,
//     released as the standby it now is. With no standby it is released
//     as it is: there is nothing to fail over to.
func Plan(mgrs []Mgr, m Map, failedOver uint64) Step {
	mgrs = slices.Clone(mgrs)
	slices.SortFunc(mgrs, func(a, b Mgr) int { return strings.Compare(a.ID, b.ID) })
	for _, g := range mgrs {
		if g.Held && g.Current {
			return Step{Release, g.ID, fmt.Sprintf("mgr %s's change does not change its pods", g.ID)}
		}
	}
	if !m.Available || m.Active == "" {
		for _, g := range mgrs {
			if g.Held {
				return Step{Release, g.ID, "no mgr is active and available: there is no service to keep, and the change may be its fix"}
			}
		}
	}
	for _, g := range mgrs {
		if g.Held {
			continue
		}
		switch {
		case g.Stalled != "":
			return Step{Stall, g.ID, fmt.Sprintf("mgr %s's rollout stopped (%s)", g.ID, g.Stalled)}
		case !g.Current || !g.Ready:
			return Step{Wait, g.ID, fmt.Sprintf("mgr %s is rolling out", g.ID)}
		case g.Replicas > 0 && !m.knows(g.ID):
			return Step{Wait, g.ID, fmt.Sprintf("mgr %s's daemon has not joined the mgr map", g.ID)}
		}
	}
	for _, g := range mgrs {
		if g.Held && g.ID != m.Active {
			return Step{Release, g.ID, fmt.Sprintf("mgr %s is a standby", g.ID)}
		}
	}
	for _, g := range mgrs {
		if !g.Held || g.ID != m.Active {
			continue
		}
		switch {
		case failedOver != 0 && failedOver == m.ActiveGID:
			return Step{Wait, g.ID, fmt.Sprintf("mgr %s was failed over; waiting for another mgr to take over", g.ID)}
		case len(m.Standbys) == 0:
			return Step{Release, g.ID, fmt.Sprintf("mgr %s is active with no standby to fail over to", g.ID)}
		case g.HeldFor < Settle:
			return Step{Wait, g.ID, fmt.Sprintf("mgr %s is active: waiting %s for the rest of the change to arrive", g.ID, Settle)}
		}
		return Step{Failover, g.ID, fmt.Sprintf("mgr %s is active and every standby runs its new pod", g.ID)}
	}
	return Step{Wait, "", "no mgr is held"}
}

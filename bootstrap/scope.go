// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// scope is everything one reconcile of one mgr knows. Each step reads it and
// adds to it; nothing in it is read twice.
type scope struct {
	// d is the Deployment as read from the cache, id its mgr id.
	d  *appsv1.Deployment
	id string
	// mgrs are the namespace's mgr Deployments (from the cache, listed once
	// by listMgrs).
	mgrs []appsv1.Deployment
	// prev is the status the controller may act on (mgrstatus.Store.Read); next is
	// the one the steps build, written once when the reconcile ends (writeStatus).
	prev, next mgrstatus.Status
	// want is the cluster's module set (chooseModules).
	want []string
	// removeKeys are the cephx keys a deleted mgr takes with it (decideKey).
	removeKeys []string
	// again is how soon to look again when nothing else brings the mgr
	// back (0: not asked); change is made to the Deployment in the status
	// write (a key rotation's pod template annotation).
	again  time.Duration
	change func(*appsv1.Deployment)
	// c and cerr are the connection to the namespace's Ceph cluster, or why
	// there is none, once conn ran: read only when a ceph call is due, and
	// at most once.
	c    *ceph.Conn
	cerr error
}

// newScope starts the scope of a reconcile of mgr id: the verified status.
func (r *Reconciler) newScope(d *appsv1.Deployment, id string) *scope {
	prev, forged := r.status.Read(d)
	if forged {
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonStatusForged, "Bootstrap",
			"annotation %s was not written by the controller (its seal does not verify, or it is not the status last written): ignored and rewritten; only the controller writes it",
			contract.AnnotationBootstrapStatus)
	}
	s := &scope{d: d, id: id, prev: prev}
	s.next = s.prev
	s.next.LastError, s.next.ObservedGeneration = "", d.Generation
	return s
}

// listMgrs is the first bootstrap step: the namespace's mgrs, which the PDB
// and the module set are decided from (a deletion needs none).
func (r *Reconciler) listMgrs(ctx context.Context, s *scope) error {
	ds := &appsv1.DeploymentList{}
	if err := r.Client.List(ctx, ds, client.InNamespace(s.d.Namespace), client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
		return err
	}
	s.mgrs = ds.Items
	return nil
}

// conn reads the namespace's mon_host and admin keyring, once per reconcile
// and only when a ceph call is needed.
func (r *Reconciler) conn(ctx context.Context, s *scope) (ceph.Conn, error) {
	if s.c == nil && s.cerr == nil {
		c, err := r.Clusters.Get(ctx, s.d.Namespace)
		if s.cerr = err; err == nil {
			s.c = &c
		}
	}
	if s.cerr != nil {
		return ceph.Conn{}, s.cerr
	}
	return *s.c, nil
}

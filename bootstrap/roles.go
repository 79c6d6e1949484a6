// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

// roleChange is one mgr pod whose mgr_role label is not what the mgr map says.
type roleChange struct {
	Pod, ID, Role string
}

// planRoles decides the mgr_role label of the live pods of the managed mgrs
// ids from the active mgr's id: active for its pods, standby for the others.
// Pods of other mgrs (Rook's own, opted out) are not ours to label. Labels
// are compared with what the pods carry, so a stale or hand-set label is
// corrected, and a correct one costs nothing. No active mgr known ("")
// changes nothing: a Service then keeps its endpoints rather than losing
// them on a failed read.
func planRoles(active string, ids []string, pods []corev1.Pod) []roleChange {
	if active == "" {
		return nil
	}
	var changes []roleChange
	for _, p := range pods {
		id := p.Labels[contract.LabelMgrID]
		if !slices.Contains(ids, id) || p.DeletionTimestamp != nil {
			continue
		}
		want := contract.RoleStandby
		if id == active {
			want = contract.RoleActive
		}
		if p.Labels[contract.LabelMgrRole] != want {
			changes = append(changes, roleChange{Pod: p.Name, ID: id, Role: want})
		}
	}
	slices.SortFunc(changes, func(a, b roleChange) int {
		if a.Pod < b.Pod {
			return -1
		}
		if a.Pod > b.Pod {
			return 1
		}
		return 0
	})
	return changes
}

// clusterMgrs groups the managed, live mgr Deployments by namespace (the
// cluster), each with its mgr ids.
func clusterMgrs(ds []appsv1.Deployment) map[string][]string {
	out := map[string][]string{}
	for i := range ds {
		d := &ds[i]
		if !mutate.IsMgr(d) || mutate.LeftAlone(d) || d.DeletionTimestamp != nil || mutate.MgrID(d) == "" {
			continue
		}
		out[d.Namespace] = append(out[d.Namespace], mutate.MgrID(d))
	}
	return out
}

// RoleWatcher labels each cluster's mgr pods mgr_role=active|standby, which
// the cluster's Services select. It runs on the leader only: every
// RoleInterval it reads each cluster's mgr map with one `ceph mgr stat` — a
// cluster with a single mgr needs none, its mgr is the active one — and
// patches the pods whose label differs. At rest it costs those reads and no
// write.
type RoleWatcher struct {
	r *Reconciler
}

// NeedLeaderElection: one replica labels.
func (w *RoleWatcher) NeedLeaderElection() bool { return true }

// Start runs until ctx ends.
func (w *RoleWatcher) Start(ctx context.Context) error {
	interval := w.r.RoleInterval
	if interval <= 0 {
		interval = 5 * time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		w.pass(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// pass labels every cluster once.
func (w *RoleWatcher) pass(ctx context.Context) {
	log := logf.FromContext(ctx).WithName("mgr-role")
	ds := &appsv1.DeploymentList{}
	if err := w.r.Client.List(ctx, ds, client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
		log.Error(err, "listing mgr Deployments")
		return
	}
	for ns, ids := range clusterMgrs(ds.Items) {
		active, err := w.active(ctx, ns, ids)
		if err != nil {
			log.V(1).Info("mgr map not read; labels left as they are", "namespace", ns, "error", err.Error())
			continue
		}
		pods := &corev1.PodList{}
		if err := w.r.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
			log.Error(err, "listing mgr pods", "namespace", ns)
			continue
		}
		byName := map[string]*corev1.Pod{}
		for i := range pods.Items {
			byName[pods.Items[i].Name] = &pods.Items[i]
		}
		for _, c := range planRoles(active, ids, pods.Items) {
			if err := w.label(ctx, byName[c.Pod], c, ds.Items); err != nil {
				log.Error(err, "labelling mgr pod", "namespace", ns, "pod", c.Pod)
			}
		}
	}
}

// active is the cluster's active mgr: its only one, or the mgr map's.
func (w *RoleWatcher) active(ctx context.Context, ns string, ids []string) (string, error) {
	if len(ids) == 1 {
		return ids[0], nil
	}
	conn, err := w.r.clusterConn(ctx, ns)
	if err != nil {
		return "", err
	}
	st, err := w.r.Ceph.MgrStat(ctx, conn)
	if err != nil || !st.Available {
		return "", err
	}
	return st.ActiveName, nil
}

// label patches one pod (from the cache's list) to its role.
func (w *RoleWatcher) label(ctx context.Context, p *corev1.Pod, c roleChange, ds []appsv1.Deployment) error {
	ns := p.Namespace
	patch := client.MergeFrom(p.DeepCopy())
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[contract.LabelMgrRole] = c.Role
	apiWrites.Inc()
	if err := w.r.Client.Patch(ctx, p, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	if c.Role != contract.RoleActive {
		return nil
	}
	for i := range ds {
		if ds[i].Namespace == ns && mutate.MgrID(&ds[i]) == c.ID {
			w.r.Recorder.Eventf(&ds[i], p, corev1.EventTypeNormal, ReasonMgrRole, "Label",
				"mgr %s is the active mgr: pod %s labelled %s=%s, the cluster's Services select it", c.ID, p.Name, contract.LabelMgrRole, c.Role)
		}
	}
	return nil
}

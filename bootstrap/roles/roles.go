// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package roles labels each Ceph cluster's mgr pods mgr_role=active|standby
// from the cluster's mgr map, which the cluster's Services select; its reads
// are also the probe that closes a cluster's breaker (bootstrap/cluster).
package roles

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rook-mgr/mgr-webhook/bootstrap/cluster"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// ReasonMgrRoleChanged is the reason of the Event on a mgr that became the
// active one.
const ReasonMgrRoleChanged = "MgrRoleChanged"

// roleChange is one mgr pod whose mgr_role label is not what the mgr map says.
type roleChange struct {
	Pod, ID, Role string
}

// planRoles decides the mgr_role label of the live pods of the managed mgrs
// (owners: each mgr id's Deployment name) from the active mgr's id: active
// for their pods, standby for the others. Only a pod its mgr Deployment runs
// counts: its controller is the ReplicaSet the Deployment made for the pod's
// template (named <Deployment>-<pod-template-hash>); a pod with the mgr
// labels that some other object runs (Rook's own, opted out, or anyone's
// copy) is not ours to label, so no Service routes to it. Labels are compared
// with what the pods carry, so a stale or hand-set label is corrected, and a
// correct one costs nothing. No active mgr known ("") changes nothing: a
// Service then keeps its endpoints rather than losing them on a failed read.
func planRoles(active string, owners map[string]string, pods []corev1.Pod) []roleChange {
	if active == "" {
		return nil
	}
	var changes []roleChange
	for _, p := range pods {
		id := p.Labels[contract.LabelMgrID]
		owner, ok := owners[id]
		if !ok || p.DeletionTimestamp != nil || !runBy(&p, owner) {
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
	slices.SortFunc(changes, func(a, b roleChange) int { return strings.Compare(a.Pod, b.Pod) })
	return changes
}

// runBy reports whether pod p is run by Deployment name: its controller is
// that Deployment's ReplicaSet for the pod's template.
func runBy(p *corev1.Pod, name string) bool {
	ref := metav1.GetControllerOf(p)
	hash := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	return ref != nil && hash != "" && ref.APIVersion == "apps/v1" && ref.Kind == "ReplicaSet" && ref.Name == name+"-"+hash
}

// probeState is the role watcher's schedule for one cluster that answers
// (one whose breaker is open is read on the cluster's clock instead).
type probeState struct {
	inFlight bool
	next     time.Time // not asked again before this
}

// planProbes decides which of the clusters that need their mgr map read
// (ask) are due now, and which clusters the watcher should forget (no longer
// asked, and not being read). A cluster whose breaker is open is due when
// open says so (its probe is due on the cluster's clock); any other when
// its interval has passed. A cluster being read is never asked twice at
// once, so a mon that does not answer costs one worker, never a queue of
// them. slack absorbs the ticker's jitter.
func planProbes(now time.Time, slack time.Duration, ask map[string]bool, states map[string]probeState, open map[string]bool) (due, gone []string) {
	for ns := range ask {
		st := states[ns]
		dueNow, isOpen := open[ns]
		if !isOpen {
			dueNow = !now.Before(st.next.Add(-slack))
		}
		if !st.inFlight && dueNow {
			due = append(due, ns)
		}
	}
	for ns, st := range states {
		if !ask[ns] && !st.inFlight {
			gone = append(gone, ns)
		}
	}
	slices.Sort(due)
	slices.Sort(gone)
	return due, gone
}

// Watcher labels each cluster's mgr pods mgr_role=active|standby, which
// the cluster's Services select. It runs on the leader only. Every
// RoleInterval it reads the mgr map of each cluster with two or more mgrs
// (`mgr stat`, over a kept connection: ceph.Monitor) — a cluster with a
// single mgr needs none, its mgr is the active one — and patches the pods
// whose label differs. The clusters are read in parallel, at most RoleWorkers
// at once, each on its own schedule: one that does not answer is asked again
// on the cluster's clock (cluster.Cache.RetryAfter), and holds no other back.
// Its reads are the probe that closes a cluster's breaker once it answers
// again, so the watcher also probes, while their breaker is open, clusters
// with a single mgr or with none but one being deleted.
type Watcher struct {
	// Client reads the mgr Deployments and pods (cached) and labels the pods.
	Client   client.Client
	Recorder recorder.EventRecorder
	Clusters *cluster.Cache
	// Interval is how often a cluster that answers is read; Workers bounds
	// the clusters read at once.
	Interval time.Duration
	Workers  int
	// Wrote counts each API write (the controller's write counter).
	Wrote func()

	mu     sync.Mutex
	states map[string]probeState
	sem    chan struct{}
}

// NeedLeaderElection: one replica labels.
func (w *Watcher) NeedLeaderElection() bool { return true }

// Start runs until ctx ends.
func (w *Watcher) Start(ctx context.Context) error {
	w.sem = make(chan struct{}, max(w.Workers, 1))
	w.states = map[string]probeState{}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		t.Reset(w.pass(ctx))
	}
}

// pass labels the single-mgr clusters and starts the reads that are due. It
// returns when the next pass is due: an interval on, or sooner when the
// clock of a cluster whose breaker is open says (so its probe, and the
// retry of its mgrs that an answer brings, is not late by a tick).
func (w *Watcher) pass(ctx context.Context) (next time.Duration) {
	next = w.Interval
	log := logf.FromContext(ctx).WithName("mgr-role")
	ds := &appsv1.DeploymentList{}
	listed := time.Now()
	if err := w.Client.List(ctx, ds, client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
		log.Error(err, "listing mgr Deployments")
		return
	}
	clusters := contract.ClusterMgrs(ds.Items)
	ask := map[string]bool{}
	for ns, ids := range clusters {
		if len(ids) == 1 && !w.Clusters.Unreachable(ns) {
			w.label(ctx, ns, ids, ids[0], ds.Items)
			continue
		}
		ask[ns] = true
	}
	now, slack := time.Now(), w.Interval/10
	present := map[string]bool{} // namespaces with any mgr, one being deleted included
	for i := range ds.Items {
		if contract.IsMgr(&ds.Items[i]) {
			present[ds.Items[i].Namespace] = true
		}
	}
	open := map[string]bool{}
	for ns := range present {
		if w.Clusters.Unreachable(ns) {
			ask[ns], open[ns] = true, w.Clusters.ProbeDue(ns, now, slack)
			next = min(next, w.Clusters.RetryAfter(ns))
		}
	}
	w.mu.Lock()
	due, gone := planProbes(now, slack, ask, w.states, open)
	for _, ns := range gone {
		delete(w.states, ns)
	}
	for _, ns := range due {
		st := w.states[ns]
		st.inFlight = true
		w.states[ns] = st
	}
	w.mu.Unlock()
	for _, ns := range gone {
		w.Clusters.Forget(ns, listed)
	}
	for _, ns := range due {
		go w.probe(ctx, ns, clusters[ns], ds.Items)
	}
	return next
}

// probe reads cluster ns's mgr map, records the outcome in its breaker and
// its schedule, and labels its pods.
func (w *Watcher) probe(ctx context.Context, ns string, ids []string, ds []appsv1.Deployment) {
	log := logf.FromContext(ctx).WithName("mgr-role").WithValues("namespace", ns)
	select {
	case w.sem <- struct{}{}:
		defer func() { <-w.sem }()
	case <-ctx.Done():
		return
	}
	start := time.Now()
	active, err := w.active(ctx, ns, ids)
	w.mu.Lock()
	w.states[ns] = probeState{next: start.Add(w.Interval)}
	w.mu.Unlock()
	if err != nil {
		log.V(1).Info("mgr map not read; labels left as they are", "error", err.Error())
		return
	}
	w.label(ctx, ns, ids, active, ds)
}

// active is the active mgr in cluster ns's mgr map ("" while none is).
func (w *Watcher) active(ctx context.Context, ns string, ids []string) (string, error) {
	stat, err := w.Clusters.Probe(ctx, ns)
	if err != nil {
		return "", err
	}
	if len(ids) == 1 {
		return ids[0], nil // the probe of an open breaker: its only mgr is the active one
	}
	if !stat.Available {
		return "", nil
	}
	return stat.ActiveName, nil
}

// label sets the mgr_role label of cluster ns's pods from its active mgr.
func (w *Watcher) label(ctx context.Context, ns string, ids []string, active string, ds []appsv1.Deployment) {
	if active == "" {
		return
	}
	log := logf.FromContext(ctx).WithName("mgr-role")
	pods := &corev1.PodList{}
	if err := w.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
		log.Error(err, "listing mgr pods", "namespace", ns)
		return
	}
	byName := map[string]*corev1.Pod{}
	for i := range pods.Items {
		byName[pods.Items[i].Name] = &pods.Items[i]
	}
	owners := map[string]string{}
	for i := range ds {
		if d := &ds[i]; d.Namespace == ns && slices.Contains(ids, contract.MgrID(d)) && contract.Managed(d) && d.DeletionTimestamp == nil {
			owners[contract.MgrID(d)] = d.Name
		}
	}
	for _, c := range planRoles(active, owners, pods.Items) {
		if err := w.patch(ctx, byName[c.Pod], c, ds); err != nil {
			log.Error(err, "labelling mgr pod", "namespace", ns, "pod", c.Pod)
		}
	}
}

// patch sets one pod (from the cache's list) to its role.
func (w *Watcher) patch(ctx context.Context, p *corev1.Pod, c roleChange, ds []appsv1.Deployment) error {
	ns := p.Namespace
	patch := client.MergeFrom(p.DeepCopy())
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[contract.LabelMgrRole] = c.Role
	w.Wrote()
	if err := w.Client.Patch(ctx, p, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	if c.Role != contract.RoleActive {
		return nil
	}
	for i := range ds {
		if ds[i].Namespace == ns && contract.MgrID(&ds[i]) == c.ID {
			w.Recorder.Eventf(&ds[i], p, corev1.EventTypeNormal, ReasonMgrRoleChanged, "Label",
				"mgr %s is the active mgr: pod %s labelled %s=%s, the cluster's Services select it", c.ID, p.Name, contract.LabelMgrRole, c.Role)
		}
	}
	return nil
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package recovery fails a Ceph cluster's active mgr over to a standby when
// a mgr module the controller turned on has failed on it. Ceph reports such
// a module (health check MGR_MODULE_ERROR) and leaves it failed until that
// mgr restarts; the standby that takes over loads its modules anew. At most
// one failover per cluster per Interval, so that a module that fails on
// every mgr does not fail them over in a loop; with no standby, or the
// budget spent, the mgr is left alone and an Event says why.
package recovery

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// Event reasons, on the active mgr's Deployment.
const (
	// ReasonFailover: the active mgr was failed over for a failed module.
	ReasonFailover = "ModuleFailover"
	// ReasonHeld: a module failed, and the mgr was left alone (no standby,
	// or the budget spent).
	ReasonHeld = "ModuleFailoverHeld"
)

// Ceph is what recovery calls (cluster.Cache's guarded ceph).
type Ceph interface {
	ceph.Commander
	MgrStat(ctx context.Context, conn ceph.Conn) (ceph.MgrStat, error)
}

// verdict is what to do about a cluster's failed modules.
type verdict struct {
	// Modules are the failed modules the controller turned on, sorted;
	// none: nothing to do.
	Modules []string
	// Failover: fail the active mgr over now; else Held says why not.
	Failover bool
	Held     string
}

// decide judges a cluster whose active mgr reports failed (module: Ceph's
// error): only the modules the controller turned on (ours) count; a
// failover needs a standby and the budget: none since last (zero: never)
// for budget.
func decide(failed map[string]string, ours []string, standbys int, last, now time.Time, budget time.Duration) verdict {
	var v verdict
	for _, m := range ours {
		if _, ok := failed[m]; ok && !slices.Contains(v.Modules, m) {
			v.Modules = append(v.Modules, m)
		}
	}
	slices.Sort(v.Modules)
	switch {
	case len(v.Modules) == 0:
	case standbys == 0:
		v.Held = "there is no standby mgr to fail over to (run a second mgr, or restart this one)"
	case !last.IsZero() && now.Before(last.Add(budget)):
		v.Held = fmt.Sprintf("the controller fails over for a failed module at most once per %s (--module-failover-interval), and did at %s: the next from %s (or `ceph mgr fail` by hand)",
			budget, last.UTC().Format(time.RFC3339), last.Add(budget).UTC().Format(time.RFC3339))
	default:
		v.Failover = true
	}
	return v
}

// Recovery judges each cluster as the CephRelease keeper reads it
// (releases.Observer) and acts: `ceph mgr fail` of the active mgr, the
// time recorded first in contract.ModuleFailoverKey.
type Recovery struct {
	// Client reads the mgr Deployments (cached), which the Events are on.
	Client   client.Reader
	Recorder events.EventRecorder
	Ceph     Ceph
	// Interval is the least time between two failovers of one cluster.
	Interval time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu sync.Mutex
	// judged is, per namespace, the facts last judged and until when that
	// judgement holds: a cluster whose failure does not change is judged
	// (three ceph reads) and told (an Event) once, not at every read.
	judged map[string]judgement
}

// judgement is what Recovery remembers of a cluster's last judgement.
type judgement struct {
	// facts are the failed modules, with their errors, and the standbys.
	facts string
	// until is when a judgement held by the budget ends (zero: it holds
	// while the facts do).
	until time.Time
	// failedOver: this judgement failed the mgr over. Until a read finds
	// no failed module or until passes, the cluster is not judged again:
	// for a few reads after `mgr fail` Ceph still reports the old failure
	// and no standby (the old active restarting), which would be judged
	// as held for want of a standby.
	failedOver bool
}

// factsOf is what a judgement depends on in f: a failover follows a change
// of the failed modules, their errors or the standbys.
func factsOf(f ceph.Facts) string {
	var b strings.Builder
	for _, m := range slices.Sorted(maps.Keys(f.FailedModules)) {
		fmt.Fprintf(&b, "%q:%q,", m, f.FailedModules[m])
	}
	fmt.Fprintf(&b, "standbys=%d", f.Standbys)
	return b.String()
}

// Observe judges cluster ns by facts f, read over conn, and acts.
func (r *Recovery) Observe(ctx context.Context, ns string, conn ceph.Conn, f ceph.Facts) {
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	r.mu.Lock()
	if r.judged == nil {
		r.judged = map[string]judgement{}
	}
	last, seen := r.judged[ns]
	if len(f.FailedModules) == 0 {
		delete(r.judged, ns)
	}
	r.mu.Unlock()
	if len(f.FailedModules) == 0 || seen && (last.failedOver && now.Before(last.until) ||
		last.facts == factsOf(f) && (last.until.IsZero() || now.Before(last.until))) {
		return
	}
	j, err := r.recover(ctx, ns, conn, f, now)
	if err != nil {
		// Judged again at the next read.
		logf.FromContext(ctx).WithName("module-recovery").Error(err, "recovering failed mgr modules", "namespace", ns)
		return
	}
	r.mu.Lock()
	r.judged[ns] = j
	r.mu.Unlock()
}

// recover judges and acts on cluster ns's failed modules.
func (r *Recovery) recover(ctx context.Context, ns string, conn ceph.Conn, f ceph.Facts, now time.Time) (judgement, error) {
	j := judgement{facts: factsOf(f)}
	record, err := ceph.ModulesRecord(ctx, r.Ceph, conn)
	if err != nil {
		return j, err
	}
	stamp, err := ceph.ConfigKey(ctx, r.Ceph, conn, contract.ModuleFailoverKey)
	if err != nil {
		return j, fmt.Errorf("reading the last failover: %w", err)
	}
	// An unreadable stamp counts as none: the key is the controller's own.
	last, _ := time.Parse(time.RFC3339, stamp)
	v := decide(f.FailedModules, record, f.Standbys, last, now, r.Interval)
	if len(v.Modules) == 0 {
		return j, nil
	}
	st, err := r.Ceph.MgrStat(ctx, conn)
	if err != nil {
		return j, err
	}
	var failed []string
	for _, m := range v.Modules {
		failed = append(failed, fmt.Sprintf("%s (%s)", m, ceph.Cut(f.FailedModules[m], maxError)))
	}
	what := fmt.Sprintf("mgr module %s failed on the active mgr %s", strings.Join(failed, ", "), st.ActiveName)
	if !v.Failover {
		if !last.IsZero() && now.Before(last.Add(r.Interval)) {
			j.until = last.Add(r.Interval)
		}
		r.event(ctx, ns, st.ActiveName, ReasonHeld, what+"; left alone: "+v.Held)
		return j, nil
	}
	// The stamp goes first: a failover that happens is never left
	// unrecorded, so a failure after it cannot loop.
	if err := ceph.SetConfigKey(ctx, r.Ceph, conn, contract.ModuleFailoverKey, now.UTC().Format(time.RFC3339)); err != nil {
		return j, fmt.Errorf("recording the failover: %w", err)
	}
	if _, err := r.Ceph.Run(ctx, conn, ceph.Command{Name: "mgr fail", Kind: ceph.Write, Args: []string{"mgr", "fail", st.ActiveName}}); err != nil {
		return j, err
	}
	j.until, j.failedOver = now.Add(r.Interval), true
	r.event(ctx, ns, st.ActiveName, ReasonFailover, fmt.Sprintf("%s: failed it over to a standby, which loads its modules anew (at most once per %s)", what, r.Interval))
	return j, nil
}

// event puts a Warning Event on the Deployment of mgr id in ns.
func (r *Recovery) event(ctx context.Context, ns, id, reason, note string) {
	ClusterEvent(ctx, r.Client, r.Recorder, ns, id, corev1.EventTypeWarning, reason, "FailOver", note)
}

// ClusterEvent puts an Event about cluster ns on the Deployment of its mgr
// id (on its first mgr by name when id is none of them): a cluster-wide
// fact is told where its users look, on a mgr of the namespace.
func ClusterEvent(ctx context.Context, c client.Reader, rec events.EventRecorder, ns, id, eventType, reason, action, note string) {
	ds := &appsv1.DeploymentList{}
	if err := c.List(ctx, ds, client.InNamespace(ns), client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil || len(ds.Items) == 0 {
		logf.FromContext(ctx).Info("no mgr Deployment to report on", "namespace", ns, "reason", reason, "note", note)
		return
	}
	slices.SortFunc(ds.Items, func(a, b appsv1.Deployment) int { return strings.Compare(a.Name, b.Name) })
	target := &ds.Items[0]
	if i := slices.IndexFunc(ds.Items, func(d appsv1.Deployment) bool { return d.Name == contract.DeploymentName(id) }); i >= 0 {
		target = &ds.Items[i]
	}
	rec.Eventf(target, nil, eventType, reason, action, "%s", note)
}

// maxError is how much of each module's error an Event quotes: an Event's
// note is at most 1 KiB.
const maxError = 160

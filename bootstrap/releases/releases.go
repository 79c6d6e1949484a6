// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package releases keeps one CephRelease per Ceph cluster (namespace) that
// runs mgrs: what the controller last read of the cluster's release floors,
// daemons' releases, health and standby mgrs, for the webhook's release
// guard and for `kubectl get cephreleases`. Only the controller writes them.
package releases

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/cluster"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// +kubebuilder:rbac:groups=mgr.ceph.rook.io,resources=cephreleases,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=mgr.ceph.rook.io,resources=cephreleases/status,verbs=update

// Reader reads a cluster's facts (cluster.Cache's guarded ceph).
type Reader interface {
	Facts(ctx context.Context, conn ceph.Conn) (ceph.Facts, error)
}

// Observer acts on each read of a cluster (the module recovery).
type Observer interface {
	Observe(ctx context.Context, ns string, conn ceph.Conn, f ceph.Facts)
}

// step is what a pass does for one namespace.
type step struct {
	Namespace string
	// Read: the cluster is read, and its CephRelease written when the read
	// differs from it or it is older than the refresh.
	Read bool
	// Delete: the namespace runs no mgr any more; its CephRelease goes.
	Delete bool
}

// plan decides a pass: every namespace with a mgr whose cluster answered
// its last call is read (one that did not keeps its last CephRelease, whose
// read time says how old it is: the keeper is never the one to find a
// cluster unreachable, nor probes one). So is one whose cluster stayed
// uncalled, without a CephRelease, for a whole interval (wasUntried: the
// last pass found it so too): a single complete mgr at rest makes no call,
// so a cluster forgotten when its last mgr went and given such a mgr again
// would otherwise never be read, and the release guard would judge it by
// nothing; a new mgr's reconcile calls its cluster within that interval, so
// the keeper does not race it to an unreachable one. Every CephRelease of a
// namespace without a mgr is deleted, when the install serves that
// namespace (served; none: all): another install's are not this one's.
// untriedNow are the namespaces found uncalled and without a record now.
func plan(mgrs map[string][]string, have, served []string, answered, untried func(ns string) bool, wasUntried map[string]bool) (steps []step, untriedNow map[string]bool) {
	untriedNow = map[string]bool{}
	for ns := range mgrs {
		idle := untried(ns) && !slices.Contains(have, ns)
		if idle {
			untriedNow[ns] = true
		}
		if answered(ns) || idle && wasUntried[ns] {
			steps = append(steps, step{Namespace: ns, Read: true})
		}
	}
	for _, ns := range have {
		if _, ok := mgrs[ns]; !ok && (len(served) == 0 || slices.Contains(served, ns)) {
			steps = append(steps, step{Namespace: ns, Delete: true})
		}
	}
	slices.SortFunc(steps, func(a, b step) int { return strings.Compare(a.Namespace, b.Namespace) })
	return steps, untriedNow
}

// statusOf is the CephRelease status of facts read at now.
func statusOf(f ceph.Facts, now time.Time) v1alpha1.CephReleaseStatus {
	names := func(vs []ceph.Version) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.String())
		}
		return out
	}
	var failed []v1alpha1.FailedModule
	for _, name := range slices.Sorted(maps.Keys(f.FailedModules)) {
		if len(failed) == maxFailedModules {
			break
		}
		failed = append(failed, v1alpha1.FailedModule{Name: ceph.Cut(name, 128), Error: ceph.Cut(f.FailedModules[name], 512)})
	}
	var insecure []string
	for _, e := range f.InsecureKeys {
		if strings.HasPrefix(e, "mgr.") && len(e) <= 253 && len(insecure) < maxInsecureMgrKeys {
			insecure = append(insecure, e)
		}
	}
	return v1alpha1.CephReleaseStatus{
		RequireOSDRelease: f.RequireOSDRelease, MinMonRelease: f.MinMonRelease,
		MonReleases: names(f.Mons), MgrReleases: names(f.Mgrs),
		Health: f.Health, StandbyMgrs: int32(f.Standbys), FailedModules: failed, InsecureMgrKeys: insecure,
		ReadTime: metav1.NewTime(now.Truncate(time.Second)),
	}
}

// maxInsecureMgrKeys is the schema's bound on status.insecureMgrKeys.
const maxInsecureMgrKeys = 64

// maxFailedModules is the schema's bound on status.failedModules.
const maxFailedModules = 64

// due reports whether want is to be written over have: what was read
// differs, or have was read refresh ago or more.
func due(have, want v1alpha1.CephReleaseStatus, refresh time.Duration) bool {
	stale := want.ReadTime.Sub(have.ReadTime.Time) >= refresh
	have.ReadTime, want.ReadTime = metav1.Time{}, metav1.Time{}
	return stale || !equality.Semantic.DeepEqual(have, want)
}

// Keeper reads each cluster every Interval and keeps its CephRelease.
type Keeper struct {
	// Client lists the mgr Deployments (cached) and writes the CephReleases.
	Client   client.Client
	Clusters *cluster.Cache
	Ceph     Reader
	// Interval is how often each cluster is read; Refresh how old a
	// CephRelease that did not change may get before it is written again
	// (its read time then says the controller still reads the cluster).
	Interval, Refresh time.Duration
	// Namespaces are the Ceph namespaces the install serves (none: all).
	Namespaces []string
	// Wrote counts each API write (the controller's write counter).
	Wrote func()
	// Observers are given each read, before its CephRelease is kept.
	Observers []Observer

	// untried are the namespaces the last pass found with a mgr, no
	// CephRelease and a cluster never called (one pass's memory).
	untried map[string]bool
}

// NeedLeaderElection: one replica writes.
func (k *Keeper) NeedLeaderElection() bool { return true }

// Start runs a pass every Interval until ctx ends.
func (k *Keeper) Start(ctx context.Context) error {
	t := time.NewTicker(k.Interval)
	defer t.Stop()
	for {
		k.pass(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (k *Keeper) pass(ctx context.Context) {
	log := logf.FromContext(ctx).WithName("ceph-releases")
	ds := &appsv1.DeploymentList{}
	if err := k.Client.List(ctx, ds, client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
		log.Error(err, "listing mgr Deployments")
		return
	}
	list := &v1alpha1.CephReleaseList{}
	if err := k.Client.List(ctx, list); err != nil {
		log.Error(err, "listing CephReleases")
		return
	}
	have := map[string]*v1alpha1.CephRelease{}
	var names []string
	for i := range list.Items {
		have[list.Items[i].Name] = &list.Items[i]
		names = append(names, list.Items[i].Name)
	}
	steps, untried := plan(contract.ClusterMgrs(ds.Items), names, k.Namespaces, k.Clusters.Answered, k.Clusters.Untried, k.untried)
	k.untried = untried
	for _, s := range steps {
		var err error
		if s.Delete {
			err = client.IgnoreNotFound(k.Client.Delete(ctx, have[s.Namespace]))
			k.Wrote()
		} else {
			err = k.keep(ctx, s.Namespace, have[s.Namespace])
		}
		if err != nil {
			log.Error(err, "keeping the CephRelease", "namespace", s.Namespace)
		}
	}
}

// keep reads cluster ns and writes its CephRelease when due.
func (k *Keeper) keep(ctx context.Context, ns string, have *v1alpha1.CephRelease) error {
	conn, err := k.Clusters.Get(ctx, ns)
	if err != nil {
		return err
	}
	f, err := k.Ceph.Facts(ctx, conn)
	if err != nil {
		return err
	}
	for _, o := range k.Observers {
		o.Observe(ctx, ns, conn, f)
	}
	want := statusOf(f, time.Now())
	if have == nil {
		have = &v1alpha1.CephRelease{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if err := k.Client.Create(ctx, have); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		k.Wrote()
	} else if !due(have.Status, want, k.Refresh) {
		return nil
	}
	have.Status = want
	k.Wrote()
	return k.Client.Status().Update(ctx, have)
}

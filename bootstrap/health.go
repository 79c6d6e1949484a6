// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
)

// breakerMax is the longest a cluster that does not answer goes without a
// ceph CLI call from a reconcile. The role watcher's cheap probe (a kept
// connection) tries it much more often and closes the breaker as soon as it
// answers, so this bounds only the cost of a cluster that stays away.
const breakerMax = 5 * time.Minute

var clustersUnreachable = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "mgr_bootstrap_clusters_unreachable",
	Help: "Ceph clusters (namespaces) whose last ceph call found them unreachable; reconciles make no ceph call to them until the role watcher's probe, or the backoff, says to try again.",
})

func init() { metrics.Registry.MustRegister(clustersUnreachable) }

// clusterHealth is one cluster's circuit breaker: how many calls in a row
// found it unreachable, until when reconciles leave it alone, and what the
// last failure said (repeated while open, so a status does not change).
type clusterHealth struct {
	failures  int
	openUntil time.Time
	last      *ceph.Error
}

// breakerWindow is how long a cluster is left alone after its n-th failure
// in a row: 1 s, doubling, at most breakerMax.
func breakerWindow(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return min(time.Second<<min(n-1, 16), breakerMax)
}

// next is h after a call that ended in err at now: an unreachable cluster
// opens (or keeps open, longer) the breaker; any answer closes it.
func (h clusterHealth) next(now time.Time, err error) clusterHealth {
	if _, notMade := err.(*breakerOpen); notMade {
		return h
	}
	var e *ceph.Error
	if !ceph.IsUnavailable(err) || !errors.As(err, &e) {
		return clusterHealth{}
	}
	n := h.failures + 1
	return clusterHealth{failures: n, openUntil: now.Add(breakerWindow(n)), last: e}
}

// healthBook holds the breaker of every cluster the controller called.
type healthBook struct {
	mu sync.Mutex
	m  map[string]clusterHealth
	// answered, when set, hears of each cluster whose breaker an answer
	// closed, so its mgrs are retried at once rather than on their own
	// retry clocks (which a refusal while open has pushed up to
	// CephRetryMax further on).
	answered func(ns string)
}

// record notes the outcome of a ceph call to cluster ns.
func (b *healthBook) record(ns string, now time.Time, err error) {
	b.mu.Lock()
	if b.m == nil {
		b.m = map[string]clusterHealth{}
	}
	was := b.m[ns].failures > 0
	h := b.m[ns].next(now, err)
	if h.failures == 0 {
		delete(b.m, ns)
	} else {
		b.m[ns] = h
	}
	clustersUnreachable.Set(float64(len(b.m)))
	answered := was && h.failures == 0 && b.answered != nil
	b.mu.Unlock()
	if answered {
		b.answered(ns)
	}
}

// refusal is the error a reconcile gets instead of a ceph call while ns's
// breaker is open, and how long it stays open; nil when calls may go.
func (b *healthBook) refusal(ns string, now time.Time) (time.Duration, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.m[ns]
	if !ok || !now.Before(h.openUntil) {
		return 0, nil
	}
	return h.openUntil.Sub(now), &breakerOpen{last: h.last}
}

// failing reports whether the last call to ns found it unreachable.
func (b *healthBook) failing(ns string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m[ns].failures > 0
}

// forget drops ns (its last mgr went).
func (b *healthBook) forget(ns string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, ns)
	clustersUnreachable.Set(float64(len(b.m)))
}

// breakerOpen is a call not made: it says what the last real call said, so
// the status and Events read the same as while calls were made.
type breakerOpen struct{ last *ceph.Error }

func (e *breakerOpen) Error() string { return e.last.Error() }
func (e *breakerOpen) Unwrap() error { return e.last }

// guarded is the controller's Ceph behind the clusters' breakers: a call to
// a cluster whose breaker is open is not made (it fails at once, as the last
// real call did), and every call made is recorded. The role watcher's probe
// goes around it (unguarded) to try an open cluster cheaply.
type guarded struct {
	Ceph
	book *healthBook
}

func guard[T any](g guarded, conn ceph.Conn, call func() (T, error)) (T, error) {
	if _, err := g.book.refusal(conn.Cluster, time.Now()); err != nil {
		var zero T
		return zero, err
	}
	v, err := call()
	g.book.record(conn.Cluster, time.Now(), err)
	return v, err
}

func (g guarded) GetOrCreateKey(ctx context.Context, conn ceph.Conn, entity string, caps []string) (string, error) {
	return guard(g, conn, func() (string, error) { return g.Ceph.GetOrCreateKey(ctx, conn, entity, caps) })
}

func (g guarded) GetKey(ctx context.Context, conn ceph.Conn, entity string) (string, error) {
	return guard(g, conn, func() (string, error) { return g.Ceph.GetKey(ctx, conn, entity) })
}

func (g guarded) SetCaps(ctx context.Context, conn ceph.Conn, entity string, caps []string) error {
	_, err := guard(g, conn, func() (struct{}, error) { return struct{}{}, g.Ceph.SetCaps(ctx, conn, entity, caps) })
	return err
}

func (g guarded) RemoveKey(ctx context.Context, conn ceph.Conn, entity string) error {
	_, err := guard(g, conn, func() (struct{}, error) { return struct{}{}, g.Ceph.RemoveKey(ctx, conn, entity) })
	return err
}

func (g guarded) MgrDump(ctx context.Context, conn ceph.Conn) (ceph.MgrMap, error) {
	return guard(g, conn, func() (ceph.MgrMap, error) { return g.Ceph.MgrDump(ctx, conn) })
}

func (g guarded) MgrStat(ctx context.Context, conn ceph.Conn) (ceph.MgrStat, error) {
	return guard(g, conn, func() (ceph.MgrStat, error) { return g.Ceph.MgrStat(ctx, conn) })
}

func (g guarded) MgrMetadata(ctx context.Context, conn ceph.Conn, id string) (ceph.MgrMetadata, error) {
	return guard(g, conn, func() (ceph.MgrMetadata, error) { return g.Ceph.MgrMetadata(ctx, conn, id) })
}

func (g guarded) Run(ctx context.Context, conn ceph.Conn, c ceph.Command) ([]byte, error) {
	return guard(g, conn, func() ([]byte, error) { return g.Ceph.Run(ctx, conn, c) })
}

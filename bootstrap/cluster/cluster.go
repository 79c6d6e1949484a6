// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package cluster owns what the controller keeps of each Ceph cluster (one
// per namespace) and answers one question: can I talk to it, and when do I
// try again? Cluster API's clustercache is the model: one accessor (Get),
// one health probe (Probe), one sentinel per condition (ErrMissing,
// ErrMonHostRefused, and ceph.IsUnavailable for a cluster that does not
// answer), and one clock (RetryAfter) that the reconciler's requeue, the
// breaker and the role watcher's next probe all read.
//
// The breaker: a ceph call that finds a cluster unreachable opens it, and
// from then on the reconciles' calls to that cluster are not made (they fail
// at once, as the last real call did) until a probe, on the cluster's clock,
// gets an answer. An answer closes it and announces the cluster, so its mgrs
// are reconciled at once.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/contract"
)

var (
	// ErrMissing marks a namespace without its cluster's Secrets (or keys).
	ErrMissing = errors.New("cluster objects missing")
	// ErrMonHostRefused marks a mon_host outside the allowed networks.
	ErrMonHostRefused = errors.New("mon_host refused")
)

var clustersUnreachable = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "mgr_bootstrap_clusters_unreachable",
	Help: "Ceph clusters (namespaces) whose last ceph call found them unreachable; reconciles make no ceph call to them until the role watcher's probe gets an answer.",
})

func init() { metrics.Registry.MustRegister(clustersUnreachable) }

// Ceph is what the controller asks of a Ceph cluster (*ceph.Runner).
type Ceph interface {
	GetOrCreateKey(ctx context.Context, conn ceph.Conn, entity string, caps []string) (string, error)
	GetKey(ctx context.Context, conn ceph.Conn, entity string) (string, error)
	SetCaps(ctx context.Context, conn ceph.Conn, entity string, caps []string) error
	RemoveKey(ctx context.Context, conn ceph.Conn, entity string) error
	RotateKey(ctx context.Context, conn ceph.Conn, entity, keyType string) (string, error)
	MgrDump(ctx context.Context, conn ceph.Conn) (ceph.MgrMap, error)
	MgrStat(ctx context.Context, conn ceph.Conn) (ceph.MgrStat, error)
	MgrMetadata(ctx context.Context, conn ceph.Conn, id string) (ceph.MgrMetadata, error)
	// Facts reads the release floors, releases, health and standbys (bootstrap/releases).
	Facts(ctx context.Context, conn ceph.Conn) (ceph.Facts, error)
	// Run runs one planned command (module enables, options, dashboard).
	Run(ctx context.Context, conn ceph.Conn, c ceph.Command) ([]byte, error)
	// Forget drops what is kept for a cluster (a connection) once its last mgr went.
	Forget(cluster string)
}

var _ Ceph = &ceph.Runner{}

// DefaultRetryMax is RetryMax when none is set.
const DefaultRetryMax = 10 * time.Second

// ConnTTL is how long Recent reuses a cluster's mon_host and admin key
// before reading the two Secrets again: a probe every few seconds must not
// cost two Secret reads per cluster.
const ConnTTL = time.Minute

// Backoff is the wait after n unanswered tries in a row: 1 s, doubling, at
// most retryMax; none before the first.
func Backoff(n int, retryMax time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	return min(time.Second<<min(n-1, 16), retryMax)
}

// Cache holds each cluster's connection, breaker and module lock.
type Cache struct {
	reader      client.Reader
	ceph        Ceph
	monNetworks []netip.Prefix
	retryMax    time.Duration

	mu sync.Mutex
	m  map[string]*state
	// answered, when set, hears of each cluster whose breaker an answer
	// closed.
	answered func(ns string)
	// locks serialize the module runs of a cluster's mgrs; never dropped (a
	// holder may outlive Forget).
	locks sync.Map // namespace -> chan struct{}
}

// state is one cluster's: its connection as last read, and its breaker.
type state struct {
	conn   *ceph.Conn
	connAt time.Time
	// failures counts the calls in a row that found it unreachable, the
	// last of them at lastTry, saying last.
	failures int
	lastTry  time.Time
	last     *ceph.Error
	// answered: its last call got an answer (whatever it said).
	answered bool
	// called is when the last call was made.
	called time.Time
}

// New is the cache of the clusters reached with reader (the two Secrets,
// read by name and uncached) and c (unguarded: Ceph() guards it), dialing
// no mon outside monNetworks (none: any), retrying an unreachable cluster at
// most retryMax apart (0: DefaultRetryMax).
func New(reader client.Reader, c Ceph, monNetworks []netip.Prefix, retryMax time.Duration) *Cache {
	if retryMax <= 0 {
		retryMax = DefaultRetryMax
	}
	return &Cache{reader: reader, ceph: c, monNetworks: monNetworks, retryMax: retryMax, m: map[string]*state{}}
}

// OnAnswer sets what hears of each cluster whose breaker an answer closed
// (set once, before the controller starts).
func (c *Cache) OnAnswer(f func(ns string)) { c.answered = f }

// Get reads cluster ns's mon_host and admin keyring (uncached: a reconcile
// acts on the namespace as it is now) and keeps them for Recent.
func (c *Cache) Get(ctx context.Context, ns string) (ceph.Conn, error) {
	conn, err := c.read(ctx, ns)
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stateOf(ns)
	if err != nil {
		st.conn = nil
		return ceph.Conn{}, err
	}
	st.conn, st.connAt = &conn, time.Now()
	return conn, nil
}

// Recent is cluster ns's connection as kept, when read within ConnTTL and
// the cluster answered its last call; otherwise Get.
func (c *Cache) Recent(ctx context.Context, ns string) (ceph.Conn, error) {
	c.mu.Lock()
	st := c.m[ns]
	if st != nil && st.conn != nil && st.failures == 0 && time.Since(st.connAt) <= ConnTTL {
		conn := *st.conn
		c.mu.Unlock()
		return conn, nil
	}
	c.mu.Unlock()
	return c.Get(ctx, ns)
}

// read reads namespace ns's mon_host and admin keyring by name.
func (c *Cache) read(ctx context.Context, ns string) (ceph.Conn, error) {
	cfg, keyring := &corev1.Secret{}, &corev1.Secret{}
	var missing []string
	if err := c.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: contract.ConfigSecretName}, cfg); err != nil {
		if !apierrors.IsNotFound(err) {
			return ceph.Conn{}, err
		}
		missing = append(missing, "Secret "+contract.ConfigSecretName)
	}
	if err := c.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: contract.AdminKeyringSecretName}, keyring); err != nil {
		if !apierrors.IsNotFound(err) {
			return ceph.Conn{}, err
		}
		missing = append(missing, "Secret "+contract.AdminKeyringSecretName)
	}
	if len(missing) == 0 && (len(cfg.Data[contract.ConfigSecretMonHostKey]) == 0 || len(keyring.Data[contract.KeyringKey]) == 0) {
		missing = append(missing, fmt.Sprintf("keys %s/%s and %s/%s", contract.ConfigSecretName, contract.ConfigSecretMonHostKey, contract.AdminKeyringSecretName, contract.KeyringKey))
	}
	if len(missing) > 0 {
		return ceph.Conn{}, fmt.Errorf("%w: namespace %s lacks %v", ErrMissing, ns, missing)
	}
	monHost := string(cfg.Data[contract.ConfigSecretMonHostKey])
	if err := ceph.CheckMonHost(monHost, c.monNetworks); err != nil {
		return ceph.Conn{}, fmt.Errorf("%w: Secret %s/%s, key %s: %v; no ceph call is made: set it to the cluster's mons, or have the controller's administrator allow their network (--mon-networks)",
			ErrMonHostRefused, ns, contract.ConfigSecretName, contract.ConfigSecretMonHostKey, err)
	}
	return ceph.Conn{Cluster: ns, MonHost: monHost, AdminKeyring: keyring.Data[contract.KeyringKey]}, nil
}

// stateOf is ns's state, made on first use; c.mu held.
func (c *Cache) stateOf(ns string) *state {
	st, ok := c.m[ns]
	if !ok {
		st = &state{}
		c.m[ns] = st
	}
	return st
}

// observe notes the outcome of a ceph call made to cluster ns at now: one
// that found it unreachable opens (or keeps open) its breaker; any answer
// closes it, and announces the cluster when it was open.
func (c *Cache) observe(ns string, now time.Time, err error) {
	if _, notMade := errors.AsType[*BreakerOpen](err); notMade {
		return
	}
	var e *ceph.Error
	unreachable := ceph.IsUnavailable(err) && errors.As(err, &e)
	c.mu.Lock()
	st := c.stateOf(ns)
	was := st.failures > 0
	st.called = now
	if unreachable {
		st.failures, st.lastTry, st.last, st.answered = st.failures+1, now, e, false
	} else {
		st.failures, st.last, st.answered = 0, nil, true
	}
	c.gauge()
	answered := was && !unreachable && c.answered != nil
	c.mu.Unlock()
	if answered {
		c.answered(ns)
	}
}

// gauge sets the unreachable clusters' count; c.mu held.
func (c *Cache) gauge() {
	n := 0
	for _, st := range c.m {
		if st.failures > 0 {
			n++
		}
	}
	clustersUnreachable.Set(float64(n))
}

// Unreachable reports whether cluster ns's breaker is open: its last call
// found it unreachable.
func (c *Cache) Unreachable(ns string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.m[ns]
	return st != nil && st.failures > 0
}

// Answered reports whether cluster ns's last call got an answer: a reader
// that should never be the one to find a cluster unreachable (the
// CephRelease keeper) reads only those, and leaves the first try and the
// probes to the reconciles and the role watcher.
func (c *Cache) Answered(ns string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.m[ns]
	return st != nil && st.answered
}

// Untried reports whether no ceph call has been made to cluster ns since the
// controller started or last forgot it (its last mgr went).
func (c *Cache) Untried(ns string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.m[ns]
	return st == nil || st.called.IsZero() && st.failures == 0
}

// RetryAfter is how long from now cluster ns is next tried: while its
// breaker is open, Backoff of its failures after the last one (at least a
// second, so a late probe never turns it into a hot loop); 0 once it
// answers.
func (c *Cache) RetryAfter(ns string) time.Duration {
	return c.retryAfter(ns, time.Now())
}

func (c *Cache) retryAfter(ns string, now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.m[ns]
	if st == nil || st.failures == 0 {
		return 0
	}
	return max(st.lastTry.Add(Backoff(st.failures, c.retryMax)).Sub(now), time.Second)
}

// ProbeDue reports whether an open breaker's probe is due at now (slack
// absorbs a ticker's jitter); false while the cluster answers.
func (c *Cache) ProbeDue(ns string, now time.Time, slack time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.m[ns]
	return st != nil && st.failures > 0 && !now.Before(st.lastTry.Add(Backoff(st.failures, c.retryMax)-slack))
}

// RetryMax is the longest wait between tries at a cluster that does not answer.
func (c *Cache) RetryMax() time.Duration { return c.retryMax }

// Probe reads cluster ns's mgr map over its kept connection (Recent), open
// breaker or not, and records the outcome: the one call that closes a
// breaker.
func (c *Cache) Probe(ctx context.Context, ns string) (ceph.MgrStat, error) {
	conn, err := c.Recent(ctx, ns)
	if err != nil {
		return ceph.MgrStat{}, err
	}
	stat, err := c.ceph.MgrStat(ctx, conn)
	c.observe(ns, time.Now(), err)
	return stat, err
}

// Lock serializes the module runs of cluster ns's mgrs. It gives up when
// ctx ends: a worker never waits out another mgr's module retries.
func (c *Cache) Lock(ctx context.Context, ns string) (unlock func(), err error) {
	v, _ := c.locks.LoadOrStore(ns, make(chan struct{}, 1))
	held := v.(chan struct{})
	select {
	case held <- struct{}{}:
		return func() { <-held }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Forget drops what is kept of cluster ns (its connection, its breaker, the
// runner's kept connection): its last mgr went, as a list made at listed
// says. A cluster called since is kept: a new mgr's reconcile, which that
// list did not see, reached it, and nothing might call it again (a
// single-mgr cluster at rest), leaving it unread by the CephRelease keeper.
func (c *Cache) Forget(ns string, listed time.Time) {
	c.mu.Lock()
	if st := c.m[ns]; st != nil && st.called.After(listed) {
		c.mu.Unlock()
		return
	}
	delete(c.m, ns)
	c.gauge()
	c.mu.Unlock()
	c.ceph.Forget(ns)
}

// Ceph is the controller's Ceph behind the clusters' breakers: a call to a
// cluster whose breaker is open is not made (it fails at once, as the last
// real call did), and every call made is recorded.
func (c *Cache) Ceph() Ceph { return guarded{Ceph: c.ceph, c: c} }

// BreakerOpen is a call not made: it says what the last real call said, so
// the status and Events read the same as while calls were made.
type BreakerOpen struct{ last *ceph.Error }

func (e *BreakerOpen) Error() string { return e.last.Error() }
func (e *BreakerOpen) Unwrap() error { return e.last }

// refusal is the error a call gets instead of being made while ns's breaker
// is open; nil when calls may go.
func (c *Cache) refusal(ns string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.m[ns]; st != nil && st.failures > 0 {
		return &BreakerOpen{last: st.last}
	}
	return nil
}

type guarded struct {
	Ceph
	c *Cache
}

func guard[T any](g guarded, conn ceph.Conn, call func() (T, error)) (T, error) {
	if err := g.c.refusal(conn.Cluster); err != nil {
		var zero T
		return zero, err
	}
	v, err := call()
	g.c.observe(conn.Cluster, time.Now(), err)
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

func (g guarded) Facts(ctx context.Context, conn ceph.Conn) (ceph.Facts, error) {
	return guard(g, conn, func() (ceph.Facts, error) { return g.Ceph.Facts(ctx, conn) })
}

func (g guarded) Run(ctx context.Context, conn ceph.Conn, c ceph.Command) ([]byte, error) {
	return guard(g, conn, func() ([]byte, error) { return g.Ceph.Run(ctx, conn, c) })
}

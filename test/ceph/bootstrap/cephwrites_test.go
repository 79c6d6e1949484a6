// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
)

// cephWrites passes every call on to the real runner and keeps, for each
// ceph write the controller makes, the Ceph cluster it went to (its
// mon_host) and its words. The controller's ceph_calls metric counts every
// cluster's writes at once, so a test that wants none to one cluster would
// also count another test's late writes to another; this counts one.
type cephWrites struct {
	bootstrap.Ceph
	mu  sync.Mutex
	all []cephWrite
}

type cephWrite struct {
	monHost, namespace, words string
	at                        time.Time
}

func (w *cephWrites) add(conn ceph.Conn, words ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all = append(w.all, cephWrite{monHost: conn.MonHost, namespace: conn.Cluster, words: strings.Join(words, " "), at: time.Now()})
}

func (w *cephWrites) GetOrCreateKey(ctx context.Context, conn ceph.Conn, entity string, caps []string) (string, error) {
	w.add(conn, "auth get-or-create-key", entity)
	return w.Ceph.GetOrCreateKey(ctx, conn, entity, caps)
}

func (w *cephWrites) SetCaps(ctx context.Context, conn ceph.Conn, entity string, caps []string) error {
	w.add(conn, "auth caps", entity)
	return w.Ceph.SetCaps(ctx, conn, entity, caps)
}

func (w *cephWrites) RemoveKey(ctx context.Context, conn ceph.Conn, entity string) error {
	w.add(conn, "auth rm", entity)
	return w.Ceph.RemoveKey(ctx, conn, entity)
}

func (w *cephWrites) Run(ctx context.Context, conn ceph.Conn, c ceph.Command) ([]byte, error) {
	if c.Kind == ceph.Write {
		w.add(conn, c.Args...) // never Stdin: passwords
	}
	return w.Ceph.Run(ctx, conn, c)
}

// to returns the writes made so far to cluster c, from any namespace.
func (w *cephWrites) to(c *cephtest.Cluster) []cephWrite {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []cephWrite
	for _, x := range w.all {
		if strings.Contains(x.monHost, c.MonHost) { // as Secret rook-ceph-config has it
			out = append(out, x)
		}
	}
	return out
}

// written records the controller's writes (TestMain gives it the runner).
var written = &cephWrites{}

// quietCluster waits until the controller has made no write to c for a
// while: what an earlier test set going (a mgr deleted, its key removed)
// is done before a test counts the writes its own change brings.
func quietCluster(t *testing.T, c *cephtest.Cluster) int {
	t.Helper()
	const quiet = 3 * time.Second
	var n int
	eventually(t, 2*time.Minute, "no ceph write to the cluster for "+quiet.String(), func(context.Context) (bool, error) {
		all := written.to(c)
		n = len(all)
		return n == 0 || time.Since(all[n-1].at) > quiet, nil
	})
	// Its mgr was bootstrapped: the recorder saw that cluster's writes (its
	// key at least), or it matches no cluster and would count nothing.
	if n == 0 {
		t.Fatalf("no ceph write to the cluster at %s recorded, not even its mgr's key", c.MonHost)
	}
	return n
}

// writesSince returns the writes to c after the first n, as the words each ran.
func writesSince(c *cephtest.Cluster, n int) []string {
	var out []string
	for _, x := range written.to(c)[n:] {
		out = append(out, x.namespace+": ceph "+x.words)
	}
	return out
}

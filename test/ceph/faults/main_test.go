// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package faults kills and restarts what the system runs on, with everything
// real (internal/harness/localcluster: control plane, kwok, a Ceph mon with mgr
// daemons a and b, mgr-webhook, and mgr-bootstrap as the shipped Deployment
// runs it: two replicas electing a leader): the leader SIGKILLed mid module
// enable, a graceful hand-over, and kube-apiserver restarted under both
// components.
package faults

import (
	"context"
	"os"
	"testing"

	"github.com/rook-mgr/mgr-webhook/internal/harness/localcluster"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

const ns = "rook-ceph"

var (
	lc   *localcluster.Cluster
	root string
)

func TestMain(m *testing.M) { testenv.Main(m, "faults", run) }

func run(m *testing.M) (int, error) {
	var err error
	if root, err = testenv.RepoRoot(); err != nil {
		return 1, err
	}
	lc, err = localcluster.Start(context.Background(), localcluster.Options{
		RepoRoot: root, CephNamespaces: []string{ns}, MoreNamespaces: []string{"ceph-late"}, MgrIDs: []string{"a", "b"}, Log: os.Stderr, BootstrapReplicas: 2,
	})
	if err != nil {
		return 1, err
	}
	defer lc.Stop()
	return m.Run(), nil
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package ceph

import (
	"context"
	"time"

	"github.com/go-logr/logr"
)

// RunnerOptions are what the controller's runner is made of (mgr-bootstrap's
// flags).
type RunnerOptions struct {
	// Binary is the ceph CLI; Python the interpreter with the rados binding
	// for the mgr map reads ("": the one Binary runs on).
	Binary, Python string
	// Timeout, ConnectTimeout: Runner's; StatTimeout: Monitor's.
	Timeout, ConnectTimeout, StatTimeout time.Duration
}

// NewRunner is the controller's runner: the CLI, and a Monitor for the mgr
// map reads when an interpreter is found. What it cannot do it logs and goes
// on (every call says so again when it fails): no interpreter costs the CLI
// per read, a CLI that does not answer fails every call. It also removes the
// credential dirs that versions before the memfd runner left when killed.
// Close stops the Monitor.
func NewRunner(ctx context.Context, o RunnerOptions, log logr.Logger) *Runner {
	r := &Runner{Binary: o.Binary, Timeout: o.Timeout, ConnectTimeout: o.ConnectTimeout}
	python := o.Python
	if python == "" {
		var err error
		if python, err = PythonOf(o.Binary); err != nil {
			log.Error(err, "no interpreter for the mgr map reader: the role watcher will run the ceph CLI for every read, which costs about 0.35 s of CPU each; set --ceph-python")
		}
	}
	if python != "" {
		r.Monitor = &Monitor{Python: python, Timeout: o.StatTimeout}
	}
	if v, err := r.CLIVersion(ctx); err != nil {
		log.Error(err, "the ceph CLI does not answer --version: every ceph call will fail", "cephBinary", o.Binary)
	} else {
		log.Info("ceph CLI", "version", v.String(), "note", "clusters of a newer release than the CLI are not supported: their keys may be of a type it cannot read")
	}
	if n, err := RemoveStale(""); err != nil {
		log.Error(err, "removing stale ceph credential dirs")
	} else if n > 0 {
		log.Info("removed ceph credential dirs an earlier version left", "count", n)
	}
	return r
}

// Close stops the Monitor's connections, if any.
func (r *Runner) Close() {
	if r.Monitor != nil {
		r.Monitor.Close()
	}
}

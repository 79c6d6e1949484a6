// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package demo runs the README's first command, `make demo`, as a user
// does (with --one-shot, so it ends): the demo must run its whole story
// and exit 0.
package demo

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// TestMakeDemo: `make demo DEMO_FLAGS=--one-shot` from the checkout's root
// exits 0 having shown each step of its story: the mgr completed (the diff),
// bootstrapped (keyring, Services, modules), a policy denial, the failover,
// and the cluster removed.
func TestMakeDemo(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-C", root, "--no-print-directory", "demo", "DEMO_FLAGS=--one-shot")
	// As a user runs it: not the test's assets; make demo finds its own.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBEBUILDER_ASSETS=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make demo DEMO_FLAGS=--one-shot: %v\n%s", err, tail(string(out), 60))
	}
	for _, step := range []string{
		"==> starting a Ceph mon + mgr",
		"==> what the webhook added",
		"==> Secret rook-ceph-mgr-a-keyring (key redacted)",
		"==> ceph mgr module ls: enabled modules",
		"==> a bad spec (replicas: 2, image busybox:latest) is refused, field by field",
		"==> ceph mgr fail a",
		"==> the endpoints of Service rook-ceph-mgr",
		"==> stopping the local cluster and Ceph, removing their files",
	} {
		if !strings.Contains(string(out), step) {
			t.Errorf("make demo never showed %q:\n%s", step, tail(string(out), 60))
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

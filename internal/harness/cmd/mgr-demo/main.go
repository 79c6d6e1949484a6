// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Command mgr-demo starts a local control plane with the webhook and shows a
// minimal mgr Deployment completed, then keeps the cluster up for kubectl.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/rook-mgr/mgr-webhook/internal/harness/demo"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

func main() {
	var o demo.Options
	flag.StringVar(&o.BinDir, "bin-dir", "bin", "directory with the built mgr-webhook binary")
	flag.StringVar(&o.WorkDir, "work-dir", "", "directory for logs and the kubeconfig (a temp dir, removed at exit, when empty)")
	flag.BoolVar(&o.OneShot, "one-shot", false, "exit after the show instead of keeping the cluster up")
	flag.Parse()

	root, err := testenv.RepoRoot()
	if err == nil {
		o.RepoRoot = root
		o.BinDir, err = filepath.Abs(o.BinDir)
	}
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err = demo.Run(ctx, o, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mgr-demo:", err)
		os.Exit(1)
	}
}

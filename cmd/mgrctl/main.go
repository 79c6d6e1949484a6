// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Command mgrctl shows what the mgr webhook would make of a mgr Deployment:
// inject, validate and diff files before they are committed or applied,
// and diff a live mgr (see internal/mgrctl).
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/rook-mgr/mgr-webhook/internal/mgrctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := mgrctl.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

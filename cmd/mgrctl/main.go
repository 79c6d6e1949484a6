// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Command mgrctl shows what the mgr webhook would make of a mgr Deployment:
// inject, validate and diff files before they are committed or applied,
// check and diff a live mgr, release mgrs before an uninstall (see
// internal/mgrctl and docs/mgrctl.md). The same program is the kubectl
// plugin kubectl-mgr (cmd/kubectl-mgr).
package main

import "github.com/rook-mgr/mgr-webhook/internal/mgrctl"

func main() { mgrctl.Main() }

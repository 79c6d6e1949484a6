// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Command kubectl-mgr is mgrctl as a kubectl plugin: on the PATH, it runs as
// `kubectl mgr inject|validate|diff|check|release` (docs/mgrctl.md).
package main

import "github.com/rook-mgr/mgr-webhook/internal/mgrctl"

func main() { mgrctl.Main() }

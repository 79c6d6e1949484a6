// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package preamble

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// TestVersionPrintsAndStops: --version prints the command's version line
// and says to exit before any other work.
func TestVersionPrintsAndStops(t *testing.T) {
	var f Flags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f.BindFlags(fs)
	if err := fs.Parse([]string{"--version", "--zap-log-level=debug"}); err != nil {
		t.Fatalf("the shared flags do not parse: %v", err)
	}
	var out bytes.Buffer
	if f.Start("mgr-example", &out) {
		t.Error("--version: Start says to run")
	}
	if !strings.HasPrefix(out.String(), "mgr-example ") {
		t.Errorf("--version printed %q, want the command's version line", out.String())
	}
}

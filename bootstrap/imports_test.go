// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestJudgementStaysInTheAudit: the reconcile makes a mgr runnable and never
// judges it; mutate's judgement reaches the controller only through its
// audit (bootstrap/audit), so the reconciler cannot grow a second one.
func TestJudgementStaysInTheAudit(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := strings.Fields(string(out))
	if slices.Contains(imports, "github.com/rook-mgr/mgr-webhook/mutate") {
		t.Error("bootstrap imports mutate: judge a mgr in bootstrap/audit")
	}
	if !slices.Contains(imports, "github.com/rook-mgr/mgr-webhook/bootstrap/audit") {
		t.Error("bootstrap no longer wires the audit (go list sees no import of bootstrap/audit)")
	}
}

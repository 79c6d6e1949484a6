// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package preamble_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestProductBinariesLinkNoHarness: the binaries make build ships (cmd/...)
// link nothing of the test harness (internal/harness: envtest, throwaway
// Ceph clusters, a logger-swapping init).
func TestProductBinariesLinkNoHarness(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/rook-mgr/mgr-webhook/cmd/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps listed %d packages; want the binaries' whole graph", len(deps))
	}
	for _, p := range deps {
		if strings.Contains(p, "/internal/harness") || strings.HasPrefix(p, "sigs.k8s.io/controller-runtime/pkg/envtest") {
			t.Errorf("a product binary links %s", p)
		}
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestTheAPIOwnsItsTypes: the MgrPolicy API depends on nothing of this
// project (the core reads its types, not the other way round), so the CRD,
// its markers and DeepCopy live with the API.
func TestTheAPIOwnsItsTypes(t *testing.T) {
	const self = "github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	out, err := exec.Command("go", "list", "-deps", self).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages; want the API's whole graph", len(deps))
	}
	for _, p := range deps {
		if strings.HasPrefix(p, "github.com/rook-mgr/mgr-webhook/") && p != self {
			t.Errorf("api/v1alpha1 depends on %s", p)
		}
	}
}

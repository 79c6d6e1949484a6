// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package contract

import (
	"slices"
	"strings"
	"testing"
)

// TestCapsNamed: the two names --caps takes, and an error naming both for
// any other.
func TestCapsNamed(t *testing.T) {
	for name, want := range map[string][]string{"mgr-profile": DefaultCaps, "allow-all": SeedCaps} {
		if got, err := CapsNamed(name); err != nil || !slices.Equal(got, want) {
			t.Errorf("CapsNamed(%q) = %v, %v", name, got, err)
		}
	}
	if _, err := CapsNamed("admin"); err == nil || !strings.Contains(err.Error(), `"mgr-profile" or "allow-all"`) {
		t.Errorf("an unknown name: %v", err)
	}
}

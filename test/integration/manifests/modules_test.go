// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// TestProductModuleHoldsNoTestOnlyModule: the product's go.mod (what the
// binaries are built from) requires none of the modules only tests use; they
// belong to test/go.mod. A test-only import in a product package, or a require
// added at the root, fails here.
func TestProductModuleHoldsNoTestOnlyModule(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	testOnly := []string{"helm.sh/", "github.com/cert-manager/", "github.com/prometheus/prometheus", "github.com/aws/", "github.com/Azure/", "cloud.google.com/"}
	read := func(dir string) []string {
		cmd := exec.Command("go", "mod", "edit", "-json")
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go mod edit -json in %s: %v", dir, err)
		}
		var m struct{ Require []struct{ Path string } }
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, r := range m.Require {
			paths = append(paths, r.Path)
		}
		return paths
	}
	isTestOnly := func(p string) bool {
		for _, prefix := range testOnly {
			if strings.HasPrefix(p, prefix) {
				return true
			}
		}
		return false
	}
	for _, p := range read(root) {
		if isTestOnly(p) {
			t.Errorf("go.mod requires %s, which only tests use: move the importing code into test/ (test/go.mod)", p)
		}
	}
	// The guard must guard something: the test module does hold them.
	found := 0
	for _, p := range read(root + "/test") {
		if isTestOnly(p) {
			found++
		}
	}
	if found == 0 {
		t.Errorf("test/go.mod requires none of %v: the test-only list is stale", testOnly)
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package modules holds the two Go modules to what CONTRIBUTING promises:
// the product's go.mod requires only what the shipped binaries link, tools
// and test-only modules live in test/go.mod, and both build against one
// Kubernetes release.
package modules

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var root = filepath.Join("..", "..", "..")

type goMod struct {
	Require []struct {
		Path     string
		Version  string
		Indirect bool
	}
	Tool []struct{ Path string }
}

func readMod(t *testing.T, dir string) goMod {
	t.Helper()
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json in %s: %v", dir, err)
	}
	var m goMod
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDirectDependenciesAreLinked: every direct requirement of the product
// module is a module whose packages the binaries of cmd/ link (go list
// -deps), and the product module names no tool: a requirement only a test,
// a generator or a linter needs belongs to test/go.mod.
func TestDirectDependenciesAreLinked(t *testing.T) {
	m := readMod(t, root)
	for _, tool := range m.Tool {
		t.Errorf("go.mod names tool %s: tools live in test/go.mod (go -C test tool ...)", tool.Path)
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "./cmd/...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/...: %v", err)
	}
	linked := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		linked[p] = true
	}
	direct := 0
	for _, r := range m.Require {
		if r.Indirect {
			continue
		}
		direct++
		if !linked[r.Path] {
			t.Errorf("go.mod requires %s directly, but no binary of cmd/ links it: move its importer to test/ or drop it", r.Path)
		}
	}
	if direct == 0 {
		t.Fatal("go.mod has no direct requirement: the reading is wrong")
	}
}

// TestProductModuleHoldsNoTestOnlyModule: the product's go.mod (what the
// binaries are built from) requires none of the modules only tests use; they
// belong to test/go.mod.
func TestProductModuleHoldsNoTestOnlyModule(t *testing.T) {
	// github.com/Azure/go-ansiterm is a terminal library kubectl's packages
	// link; the Azure SDK is what a test-only cloud dependency brings.
	testOnly := []string{"helm.sh/", "github.com/cert-manager/", "github.com/prometheus/prometheus", "github.com/aws/", "github.com/Azure/azure-sdk-for-go", "github.com/AzureAD/", "cloud.google.com/", "github.com/rhysd/actionlint"}
	isTestOnly := func(p string) bool {
		for _, prefix := range testOnly {
			if strings.HasPrefix(p, prefix) {
				return true
			}
		}
		return false
	}
	for _, r := range readMod(t, root).Require {
		if isTestOnly(r.Path) {
			t.Errorf("go.mod requires %s, which only tests use: move the importing code into test/ (test/go.mod)", r.Path)
		}
	}
	// The guard must guard something: the test module does hold them.
	found := 0
	for _, r := range readMod(t, filepath.Join(root, "test")).Require {
		if isTestOnly(r.Path) {
			found++
		}
	}
	if found == 0 {
		t.Errorf("test/go.mod requires none of %v: the test-only list is stale", testOnly)
	}
}

// kubernetesRelease reports whether a module is versioned with Kubernetes'
// releases (the staging repositories: k8s.io/api, client-go, apiserver, ...);
// k8s.io/utils, klog and kube-openapi have their own versions.
func kubernetesRelease(path string) bool {
	if !strings.HasPrefix(path, "k8s.io/") {
		return false
	}
	switch path {
	case "k8s.io/utils", "k8s.io/klog/v2", "k8s.io/kube-openapi", "k8s.io/gengo/v2":
		return false
	}
	return true
}

// TestOneKubernetesRelease: every module of a Kubernetes release, in both
// modules, direct or not, is at one version (client-go v0.37.2 beside an
// apiserver v0.37.0 once built a binary from two releases).
func TestOneKubernetesRelease(t *testing.T) {
	versions := map[string][]string{}
	for _, dir := range []string{root, filepath.Join(root, "test")} {
		for _, r := range readMod(t, dir).Require {
			if kubernetesRelease(r.Path) {
				versions[r.Version] = append(versions[r.Version], filepath.Base(dir)+": "+r.Path)
			}
		}
	}
	if len(versions) == 0 {
		t.Fatal("no k8s.io module in either go.mod: the reading is wrong")
	}
	if len(versions) > 1 {
		t.Errorf("the modules build against more than one Kubernetes release: %v", versions)
	}
}

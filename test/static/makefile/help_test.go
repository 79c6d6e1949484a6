// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package makefile holds the Makefile to what it tells: make help lists
// every target a user may run.
package makefile

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHelpListsEveryTarget: every target of the Makefile's .PHONY list is in
// `make help`, with its description (a target whose name has a digit, e2e,
// once was not).
func TestHelpListsEveryTarget(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	phony := regexp.MustCompile(`(?m)^\.PHONY:(.*)$`).FindStringSubmatch(string(data))
	if phony == nil {
		t.Fatal("the Makefile has no .PHONY list")
	}
	out, err := exec.Command("make", "-C", root, "--no-print-directory", "help").CombinedOutput()
	if err != nil {
		t.Fatalf("make help: %v\n%s", err, out)
	}
	listed := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if name, what, ok := strings.Cut(line, "\t"); ok {
			listed[name] = what
		}
	}
	for _, target := range strings.Fields(phony[1]) {
		if listed[target] == "" {
			t.Errorf("make help does not list %s", target)
		}
	}
}

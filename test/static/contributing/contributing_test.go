// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package contributing runs CONTRIBUTING.md's commands as written, on a
// machine where Ceph's programs are missing and KUBEBUILDER_ASSETS is unset,
// as a new contributor's is.
package contributing

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var root = filepath.Join("..", "..", "..")

// ranByCI are the commands .ci/run runs itself (make test, and make verify
// as its first prerequisite): run here again, they would double CI's time.
var ranByCI = map[string]bool{"make test": true, "make verify": true}

// TestContributingCommandsRunAsWritten: each ```sh block of CONTRIBUTING.md
// runs from the checkout's root, as one shell script, and exits 0. make unit
// does so with every Ceph program shadowed by one that fails, so a unit test
// that needs a Ceph daemon fails it.
func TestContributingCommandsRunAsWritten(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "CONTRIBUTING.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(data), -1)
	if len(blocks) == 0 {
		t.Fatal("CONTRIBUTING.md has no sh block")
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^make test\b`).Match(ci) {
		t.Fatal(".ci/run does not run make test: the commands left to CI are run by nobody")
	}

	noCeph := t.TempDir()
	for _, p := range []string{"ceph", "ceph-mon", "ceph-mgr", "ceph-osd", "ceph-authtool", "monmaptool", "rados"} {
		if err := os.WriteFile(filepath.Join(noCeph, p), []byte("#!/bin/sh\necho \"$0: Ceph is not installed here\" >&2\nexit 127\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "KUBEBUILDER_ASSETS="):
		case strings.HasPrefix(kv, "PATH="):
			env = append(env, "PATH="+noCeph+string(os.PathListSeparator)+strings.TrimPrefix(kv, "PATH="))
		default:
			env = append(env, kv)
		}
	}

	ran := 0
	for i, b := range blocks {
		var script []string
		for _, line := range strings.Split(b[1], "\n") {
			command := strings.TrimSpace(strings.SplitN(line, "#", 2)[0])
			if command == "" || ranByCI[command] {
				continue
			}
			script = append(script, command)
		}
		if len(script) == 0 {
			continue
		}
		ran += len(script)
		t.Logf("block %d: %s", i+1, strings.Join(script, "; "))
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", strings.Join(script, "\n"))
		cmd.Dir = root
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("CONTRIBUTING.md's block %d fails as written: %v\n%s", i+1, err, tail(out))
		}
	}
	if ran == 0 {
		t.Error("CONTRIBUTING.md's blocks hold only what CI runs: nothing was tried")
	}
}

func tail(out []byte) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

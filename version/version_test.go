// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package version_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/version"
)

func TestBuildInfoMetric(t *testing.T) {
	version.Version, version.Revision = "v9.9.9", "abc123"
	defer func() { version.Version, version.Revision = "", "" }()
	reg := prometheus.NewRegistry()
	reg.MustRegister(version.Collector("mgr-webhook"))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != "mgr_webhook_build_info" || len(mfs[0].GetMetric()) != 1 {
		t.Fatalf("gathered %v", mfs)
	}
	m := mfs[0].GetMetric()[0]
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if m.GetGauge().GetValue() != 1 || labels["component"] != "mgr-webhook" || labels["version"] != "v9.9.9" || labels["revision"] != "abc123" || !strings.HasPrefix(labels["goversion"], "go") {
		t.Errorf("build_info %v = %v", labels, m.GetGauge().GetValue())
	}
}

// TestBinariesReportTheirVersion: both binaries, built as the Makefile
// builds them, print the version with --version and log it first.
func TestBinariesReportTheirVersion(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ldflags := "-X github.com/rook-mgr/mgr-webhook/version.Version=v9.9.9-test -X github.com/rook-mgr/mgr-webhook/version.Revision=r123"
	cmd := exec.Command("go", "build", "-ldflags", ldflags, "-o", dir+"/", "./cmd/mgr-webhook", "./cmd/mgr-bootstrap")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, bin := range []string{"mgr-webhook", "mgr-bootstrap"} {
		out, err := exec.Command(filepath.Join(dir, bin), "--version").CombinedOutput()
		if want := bin + " v9.9.9-test (revision r123, go"; err != nil || !strings.HasPrefix(string(out), want) {
			t.Errorf("%s --version: %q (%v); want it to start %q", bin, out, err, want)
		}
		// Without a cluster it stops at once, after its first log line.
		out, _ = exec.Command(filepath.Join(dir, bin), "--kubeconfig", filepath.Join(dir, "missing")).CombinedOutput()
		first, _, _ := strings.Cut(string(out), "\n")
		var line map[string]any
		if err := json.Unmarshal([]byte(first), &line); err != nil || line["version"] != "v9.9.9-test" || line["revision"] != "r123" {
			t.Errorf("%s's first log line %q: want the version and revision in it (%v)", bin, first, err)
		}
	}
}

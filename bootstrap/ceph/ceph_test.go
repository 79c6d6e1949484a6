// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package ceph

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		helper()
		return
	}
	stop, err := startLive()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ceph:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// helperEnv makes the test binary a stand-in controller: it runs one ceph
// call against a mon that never answers, and is killed mid-call.
const helperEnv = "CEPH_RUNNER_HELPER_CLUSTER"

func helper() {
	r := &Runner{ConnectTimeout: 60 * time.Second, Timeout: 120 * time.Second}
	_, err := r.MgrDump(context.Background(), Conn{Cluster: os.Getenv(helperEnv), MonHost: "v2:127.0.0.1:1", AdminKeyring: []byte(os.Getenv("HELPER_KEYRING"))})
	fmt.Println(err)
}

func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"mgr-bootstrap-ceph-1", "mgr-bootstrap-ceph-2", "other"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "mgr-bootstrap-ceph-1", "keyring"), []byte("[client.admin]"), 0o600); err != nil {
		t.Fatal(err)
	}
	hourAgo := time.Now().Add(-time.Hour)
	for _, name := range []string{"mgr-bootstrap-ceph-1", "mgr-bootstrap-ceph-2"} {
		if err := os.Chtimes(filepath.Join(dir, name), hourAgo, hourAgo); err != nil {
			t.Fatal(err)
		}
	}
	// A fresh one belongs to a call still running (an older replica beside us).
	if err := os.MkdirAll(filepath.Join(dir, "mgr-bootstrap-ceph-3"), 0o700); err != nil {
		t.Fatal(err)
	}
	n, err := RemoveStale(dir)
	if err != nil || n != 2 {
		t.Fatalf("RemoveStale = %d, %v; want 2", n, err)
	}
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if !slices.Equal(left, []string{"mgr-bootstrap-ceph-3", "other"}) {
		t.Errorf("left %v, want the fresh dir and other", left)
	}
}

func TestStableMessage(t *testing.T) {
	got := stableMessage("2026-12-01T10:17:41.999+0000 7ff9a53ff6c0 -1 auth: error parsing file /dev/fd/4: cannot parse buffer: Malformed input")
	if want := "auth: error parsing file /dev/fd/4: cannot parse buffer: Malformed input"; got != want {
		t.Errorf("stableMessage = %q, want %q", got, want)
	}
	if got := stableMessage("Error EINVAL: key for mgr.a exists but cap mon does not match"); got != "Error EINVAL: key for mgr.a exists but cap mon does not match" {
		t.Errorf("a plain message changed: %q", got)
	}
}

// A mgr runs the always-on modules of its own release; one newer than the
// map names runs the newest listed.
func TestModulesForRelease(t *testing.T) {
	m := MgrMap{
		Enabled:          []string{"iostat"},
		AvailableModules: []ModuleInfo{{Name: "iostat", CanRun: true}, {Name: "orchestrator", CanRun: true}, {Name: "orchestrator_cli", CanRun: true}, {Name: "rook"}},
		AlwaysOn:         map[string][]string{"nautilus": {"orchestrator_cli"}, "octopus": {"orchestrator"}},
	}
	for rel, want := range map[Version]string{
		{Major: 14, Minor: 2, Patch: 22}: "always [orchestrator_cli] enabled [iostat] disabled [{orchestrator true } {rook false }]",
		{Major: 15, Minor: 2, Patch: 17}: "always [orchestrator] enabled [iostat] disabled [{orchestrator_cli true } {rook false }]",
		{Major: 22, Minor: 0, Patch: 0}:  "always [orchestrator] enabled [iostat] disabled [{orchestrator_cli true } {rook false }]",
		{Major: 13, Minor: 2, Patch: 3}:  "always [] enabled [iostat] disabled [{orchestrator true } {orchestrator_cli true } {rook false }]",
	} {
		got := m.Modules(rel)
		if s := fmt.Sprintf("always %v enabled %v disabled %v", got.AlwaysOn, got.Enabled, got.Disabled); s != want {
			t.Errorf("%v: %s, want %s", rel, s, want)
		}
	}
}

func TestRedact(t *testing.T) {
	key := "AQBGm2VnkT3sJxYhLQAAp8Zq4f1cR7uWmN0dEg==" // a cephx key's shape
	for name, tc := range map[string]struct{ in, want string }{
		"the CLI's undecodable key": {"auth: error parsing file /dev/fd/4: error setting modifier for [client.admin] type=key val=" + key + ": Malformed input",
			"auth: error parsing file /dev/fd/4: error setting modifier for [client.admin] type=key val=<redacted>"},
		"a value that is not base64": {"type=key val=AQB!not-base64: Malformed input", "type=key val=<redacted>"},
		"a value with a space":       {"type=key val=" + key[:12] + " " + key[12:] + ": Malformed input\nnext line", "type=key val=<redacted>\nnext line"},
		"a value with a colon":       {"type=key val=" + key[:20] + ":" + key[20:], "type=key val=<redacted>"},
		"a key cut by a space":       {"got " + key[:20] + " " + key[20:] + " back", "got <redacted> <redacted> back"},
		"a key cut by a colon":       {"got " + key[:9] + ":" + key[9:] + " back", "got <redacted>:<redacted> back"},
		"the start of a cephx key":   {"truncated AQBGm2Vn", "truncated <redacted>"},
		"a keyring line with a space": {"[mgr.a]\n\tkey = " + key[:10] + " " + key[10:] + "\n\tcaps mon = \"allow profile mgr\"",
			"[mgr.a]\n\tkey = <redacted>\n\tcaps mon = \"allow profile mgr\""},
		"a health message": {"HEALTH_WARN 1 mgr modules have failed; Module 'dashboard' has failed: OSError", "HEALTH_WARN 1 mgr modules have failed; Module 'dashboard' has failed: OSError"},
		"a keyring line":   {"[client.admin]\n\tkey = " + key, "[client.admin]\n\tkey = <redacted>"},
		"a bare key":       {"unexpected " + key + " here", "unexpected <redacted> here"},
		"a key as JSON":    {`{"key": "` + key + `"}`, `{"key": "<redacted>"}`},
		"a plain message":  {"Error EINVAL: key for mgr.a exists but cap mon does not match", "Error EINVAL: key for mgr.a exists but cap mon does not match"},
		"a path":           {"error parsing file /var/lib/ceph/mgr/ceph-a/keyring", "error parsing file /var/lib/ceph/mgr/ceph-a/keyring"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Redact(tc.in); got != tc.want {
				t.Errorf("Redact = %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A CLI's release is read from its --version banner; a binary that is no
// ceph CLI is an error, not a zero version. The installed CLI's own banner
// is read in live_test.go (TestInstalledCLIVersion).
func TestCLIVersion(t *testing.T) {
	cli := filepath.Join(t.TempDir(), "ceph")
	banner := "#!/bin/sh\necho 'ceph version 18.2.4 (e7ad5345525c7aa95470c26863873b581076945d) reef (stable)'\n"
	if err := os.WriteFile(cli, []byte(banner), 0o755); err != nil {
		t.Fatal(err)
	}
	if v, err := (&Runner{Binary: cli}).CLIVersion(t.Context()); err != nil || v != (Version{Major: 18, Minor: 2, Patch: 4}) {
		t.Errorf("a Reef CLI: %v, %v; want 18.2.4", v, err)
	}
	if v, err := (&Runner{Binary: "/bin/false"}).CLIVersion(t.Context()); err == nil {
		t.Errorf("/bin/false reported release %v", v)
	}
}

// TestReleasesOldestFirst: `ceph versions` banners become releases, each
// once, oldest first; a banner that names none is left out.
func TestReleasesOldestFirst(t *testing.T) {
	got := releases(map[string]int{
		"ceph version 18.2.7 (abc) reef (stable)":     1,
		"ceph version 16.2.15 (def) pacific (stable)": 2,
		"ceph version 16.2.15 (ghi) pacific (stable)": 1,
		"ceph version 16.2.9 (jkl) pacific (stable)":  1,
		"not a banner": 1,
	})
	want := []Version{{Major: 16, Minor: 2, Patch: 9}, {Major: 16, Minor: 2, Patch: 15}, {Major: 18, Minor: 2, Patch: 7}}
	if !slices.Equal(got, want) {
		t.Errorf("releases = %v, want %v", got, want)
	}
}

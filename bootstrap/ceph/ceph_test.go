package ceph

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rook-mgr/mgr-webhook/internal/cephtest"
)

// live is one real Ceph mon + mgr shared by this test binary.
var live *cephtest.Cluster

func TestMain(m *testing.M) {
	var err error
	if live, err = cephtest.Start(context.Background(), cephtest.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, "ceph:", err)
		os.Exit(1)
	}
	code := m.Run()
	live.Stop()
	os.Exit(code)
}

func liveConn() Conn {
	return Conn{Cluster: "rook-ceph", MonHost: live.MonHost, AdminKeyring: []byte(live.AdminKeyring)}
}

var mgrCaps = []string{"mon", "allow profile mgr", "mds", "allow *", "osd", "allow *"}

func TestKeysAndTypedErrors(t *testing.T) {
	ctx := context.Background()
	r := &Runner{Timeout: 20 * time.Second}
	key, err := r.GetOrCreateKey(ctx, liveConn(), "mgr.t1", mgrCaps)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := live.GetKey(ctx, "mgr.t1"); key != want || key == "" {
		t.Fatalf("get-or-create-key %q, cluster has %q", key, want)
	}
	again, err := r.GetOrCreateKey(ctx, liveConn(), "mgr.t1", mgrCaps)
	if err != nil || again != key {
		t.Fatalf("second get-or-create-key %q, %v; want the same key", again, err)
	}

	_, err = r.GetOrCreateKey(ctx, liveConn(), "mgr.t1", []string{"mon", "allow *"})
	if !IsInvalid(err) || IsUnavailable(err) {
		t.Fatalf("other caps: got %v, want EINVAL", err)
	}
	if strings.Contains(err.Error(), key) {
		t.Fatal("an error string carries the key")
	}
	if err := r.SetCaps(ctx, liveConn(), "mgr.t1", []string{"mon", "allow *"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.GetOrCreateKey(ctx, liveConn(), "mgr.t1", []string{"mon", "allow *"}); err != nil {
		t.Fatalf("after auth caps: %v", err)
	}

	if err := r.RemoveKey(ctx, liveConn(), "mgr.t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.GetKey(ctx, liveConn(), "mgr.t1"); !IsNotFound(err) {
		t.Fatalf("after auth rm: %v, want ENOENT", err)
	}
	if err := r.RemoveKey(ctx, liveConn(), "mgr.t1"); err != nil {
		t.Fatalf("removing a missing key must succeed: %v", err)
	}
}

func TestUnreachableClusterIsUnavailable(t *testing.T) {
	r := &Runner{ConnectTimeout: 2 * time.Second, Timeout: 10 * time.Second}
	c := liveConn()
	c.MonHost = "v2:127.0.0.1:1"
	start := time.Now()
	_, err := r.MgrDump(context.Background(), c)
	if !IsUnavailable(err) || !IsRetryable(err) {
		t.Fatalf("got %v, want an Unavailable error", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("took %s; the connect timeout is 2s", d)
	}
}

func TestCallDeadline(t *testing.T) {
	// A deadline shorter than the connect timeout: the call's own deadline wins.
	r := &Runner{ConnectTimeout: 15 * time.Second, Timeout: 1 * time.Second}
	c := liveConn()
	c.MonHost = "v2:127.0.0.1:1"
	start := time.Now()
	_, err := r.MgrDump(context.Background(), c)
	if !IsUnavailable(err) || !strings.Contains(err.Error(), "no answer within 1s") {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s with a 1s deadline", d)
	}
}

func TestModulesAndMgrMap(t *testing.T) {
	ctx := context.Background()
	r := &Runner{}
	m, err := r.MgrDump(ctx, liveConn())
	if err != nil || !m.Available || !m.Knows("a") || m.Knows("zz") {
		t.Fatalf("mgr dump %+v, %v", m, err)
	}
	md, err := r.MgrMetadata(ctx, liveConn(), "a")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := ParseVersion(md.CephVersion)
	if err != nil || rel.Major < 13 {
		t.Fatalf("mgr metadata version %q: %v, %v", md.CephVersion, rel, err)
	}
	// The module list computed from the map is what `mgr module ls` says.
	out, err := r.Run(ctx, liveConn(), Command{Name: "mgr module ls", Kind: Read, Args: []string{"mgr", "module", "ls"}})
	if err != nil {
		t.Fatal(err)
	}
	var ls Modules
	if err := json.Unmarshal(out, &ls); err != nil {
		t.Fatal(err)
	}
	got := m.Modules(rel)
	names := func(ms []ModuleInfo) (n []string) {
		for _, x := range ms {
			n = append(n, fmt.Sprintf("%s/%v", x.Name, x.CanRun))
		}
		slices.Sort(n)
		return n
	}
	sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	if len(ls.AlwaysOn) == 0 || len(ls.Disabled) == 0 ||
		!slices.Equal(sorted(got.AlwaysOn), sorted(ls.AlwaysOn)) || !slices.Equal(sorted(got.Enabled), sorted(ls.Enabled)) ||
		!slices.Equal(names(got.Disabled), names(ls.Disabled)) {
		t.Errorf("from mgr dump:\n%+v\nmgr module ls:\n%+v", got, ls)
	}
	enable := Command{Name: "mgr module enable", Kind: Write, Args: []string{"mgr", "module", "enable", "no-such-module"}}
	if _, err := r.Run(ctx, liveConn(), enable); err == nil {
		t.Fatal("enabling a module the release lacks succeeded")
	}
	if _, err := r.MgrMetadata(ctx, liveConn(), "zz"); !IsNotFound(err) {
		t.Errorf("metadata of an unknown mgr: %v, want ENOENT", err)
	}
}

// The CLI's answers, as this release gives them, sort into retry and stop.
func TestRetryableAnswers(t *testing.T) {
	ctx := context.Background()
	r := &Runner{}
	cases := map[string]struct {
		args      []string
		retryable bool
	}{
		"unknown command (a module still loading)": {[]string{"no-such", "command"}, true},
		"arguments the command does not take":      {[]string{"config", "set", "mgr", "mgr/x/y", "1", "--no-such-flag"}, false},
		"a backend module that does not exist":     {[]string{"orch", "set", "backend", "no-such-module"}, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := r.Run(ctx, liveConn(), Command{Name: "probe", Kind: Write, Args: c.args})
			if !IsInvalid(err) {
				t.Fatalf("%v: %v, want EINVAL", c.args, err)
			}
			if IsRetryable(err) != c.retryable {
				t.Errorf("%v: IsRetryable(%v) = %v, want %v", c.args, err, !c.retryable, c.retryable)
			}
		})
	}
}

func TestNoTempFilesLeft(t *testing.T) {
	before, _ := os.ReadDir(os.TempDir())
	r := &Runner{}
	if _, err := r.MgrDump(context.Background(), liveConn()); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadDir(os.TempDir())
	count := func(es []os.DirEntry) (n int) {
		for _, e := range es {
			if strings.HasPrefix(e.Name(), "mgr-bootstrap-ceph-") {
				n++
			}
		}
		return n
	}
	if count(after) > count(before) {
		t.Error("a credentials dir was left behind")
	}
}

func TestStableMessage(t *testing.T) {
	dir := "/tmp/mgr-bootstrap-ceph-2583996831"
	got := stableMessage("2026-12-01T10:17:41.999+0000 7ff9a53ff6c0 -1 auth: error parsing file "+dir+"/keyring: cannot parse buffer: Malformed input", dir)
	if want := "auth: error parsing file <call dir>/keyring: cannot parse buffer: Malformed input"; got != want {
		t.Errorf("stableMessage = %q, want %q", got, want)
	}
	if got := stableMessage("Error EINVAL: key for mgr.a exists but cap mon does not match", dir); got != "Error EINVAL: key for mgr.a exists but cap mon does not match" {
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
		{14, 2, 22}: "always [orchestrator_cli] enabled [iostat] disabled [{orchestrator true } {rook false }]",
		{15, 2, 17}: "always [orchestrator] enabled [iostat] disabled [{orchestrator_cli true } {rook false }]",
		{22, 0, 0}:  "always [orchestrator] enabled [iostat] disabled [{orchestrator_cli true } {rook false }]",
		{13, 2, 3}:  "always [] enabled [iostat] disabled [{orchestrator true } {orchestrator_cli true } {rook false }]",
	} {
		got := m.Modules(rel)
		if s := fmt.Sprintf("always %v enabled %v disabled %v", got.AlwaysOn, got.Enabled, got.Disabled); s != want {
			t.Errorf("%v: %s, want %s", rel, s, want)
		}
	}
}

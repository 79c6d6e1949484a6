// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !unit

package ceph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
)

// The tests in this file run against live, one real Ceph mon + mgr shared
// by this test binary. Built without them (-tags unit), the package's tests
// are those that need no daemon: what make mutation runs for each mutant.
var live *cephtest.Cluster

// startLive starts live for TestMain.
func startLive() (stop func(), err error) {
	if live, err = cephtest.Start(context.Background(), cephtest.Options{}); err != nil {
		return nil, err
	}
	return live.Stop, nil
}

func liveConn() Conn {
	return Conn{Cluster: "rook-ceph", MonHost: live.MonHost, AdminKeyring: []byte(live.AdminKeyring)}
}

// The real CLI reports its release without a cluster.
func TestInstalledCLIVersion(t *testing.T) {
	v, err := (&Runner{}).CLIVersion(t.Context())
	if err != nil || !v.AtLeast(contract.Pacific) {
		t.Errorf("the installed CLI: %v, %v; want Pacific or later", v, err)
	}
}

var mgrCaps = []string{"mon", "allow profile mgr", "mds", "allow *", "osd", "allow *"}

func TestKeysAndTypedErrors(t *testing.T) {
	ctx := t.Context()
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
	_, err := r.MgrDump(t.Context(), c)
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
	_, err := r.MgrDump(t.Context(), c)
	if !IsUnavailable(err) || !strings.Contains(err.Error(), "no answer within 1s") {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s with a 1s deadline", d)
	}
}

func TestModulesAndMgrMap(t *testing.T) {
	ctx := t.Context()
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
	ctx := t.Context()
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

// cephChildren are the running ceph CLI processes of cluster (by --cluster).
func cephChildren(t *testing.T, cluster string) []string {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var found []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), "--cluster="+cluster+"\x00") {
			found = append(found, p)
		}
	}
	return found
}

// loadedRados says whether one of the processes (their /proc/<pid>/cmdline
// paths) has librados mapped: the CLI is past its start-up and in its call.
func loadedRados(cmdlines []string) bool {
	for _, c := range cmdlines {
		if maps, err := os.ReadFile(filepath.Join(filepath.Dir(c), "maps")); err == nil && bytes.Contains(maps, []byte("librados.so")) {
			return true
		}
	}
	return false
}

// TestKilledControllerLeavesNothing: a controller SIGKILLed during a ceph call
// leaves no ceph child behind (Pdeathsig) and no file with the admin key: the
// credentials are in-memory files, and the temp dir stays empty throughout.
func TestKilledControllerLeavesNothing(t *testing.T) {
	tmp := t.TempDir()
	cluster := fmt.Sprintf("killed-%d", time.Now().UnixNano())
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+cluster, "HELPER_KEYRING="+live.AdminKeyring, "TMPDIR="+tmp)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(cephChildren(t, cluster)) == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the helper never started its ceph call")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The CLI is in its call (waiting for the mon that never answers) once
	// librados is loaded: the Python start-up is behind it.
	for !loadedRados(cephChildren(t, cluster)) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the helper's ceph CLI never loaded librados")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if files, _ := os.ReadDir(tmp); len(files) > 0 {
		t.Errorf("during the call the temp dir holds %v", files)
	}
	key := strings.TrimSpace(strings.SplitN(strings.SplitN(live.AdminKeyring, "key = ", 2)[1], "\n", 2)[0])
	for _, p := range cephChildren(t, cluster) {
		if b, _ := os.ReadFile(p); strings.Contains(string(b), key) {
			t.Errorf("the admin key is on the child's command line: %s", p)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := time.Now()
	for len(cephChildren(t, cluster)) > 0 {
		if time.Since(killed) > 5*time.Second {
			t.Fatalf("ceph children outlived the killed controller by 5s: %v", cephChildren(t, cluster))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("ceph child gone %s after the controller's SIGKILL", time.Since(killed).Round(time.Millisecond))
	if files, _ := os.ReadDir(tmp); len(files) > 0 {
		t.Errorf("the killed controller left %v in its temp dir", files)
	}
}

// TestNoKeyInErrors: the real CLI, given a keyring whose key it cannot
// decode (it then prints the key), or a Secret that is no keyring at all,
// fails with an error that quotes no byte of it.
func TestNoKeyInErrors(t *testing.T) {
	ctx := t.Context()
	r := &Runner{Timeout: 20 * time.Second, ConnectTimeout: 5 * time.Second}
	for name, keyring := range map[string]string{
		"undecodable key": "[client.admin]\n\tkey = AQBGm2VnSECRETSECRETSECRETSECRETSECRE0A==\n",
		"not base64":      "[client.admin]\n\tkey = AQBGm2Vn!SECRETSECRET\n",
		"corrupted":       "[client.admin\nkey AQBGm2VnSECRETSECRETSECRETSECRETSECRE0A==\n",
	} {
		t.Run(name, func(t *testing.T) {
			conn := liveConn()
			conn.AdminKeyring = []byte(keyring)
			_, err := r.Run(ctx, conn, Command{Name: "mgr stat", Kind: Read, Args: []string{"mgr", "stat"}})
			if err == nil {
				t.Fatal("a call with a bad keyring succeeded")
			}
			t.Logf("error: %v", err)
			for _, secret := range []string{"SECRET", "AQBGm2Vn", "RETSECRE"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error quotes the key: %v", err)
				}
			}
		})
	}
}

// TestChildHardening: the ceph child may not dump core (a core holds the
// admin key), and a mon_host with a line break (which would add options to
// ceph.conf) is refused before any child runs.
func TestChildHardening(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	limits := filepath.Join(dir, "ceph")
	if err := os.WriteFile(limits, []byte("#!/bin/sh\ngrep 'Max core file size' /proc/self/limits >&2\nexit 22\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Binary: limits, Timeout: 10 * time.Second}
	_, err := r.Run(ctx, liveConn(), Command{Name: "limits", Kind: Read})
	var e *Error
	if !errors.As(err, &e) || !regexp.MustCompile(`^Max core file size\s+0\s+0\s`).MatchString(e.Message) {
		t.Errorf("the child's core limit: %v; want soft and hard 0", err)
	}
	ran := filepath.Join(dir, "ran")
	marker := filepath.Join(dir, "marker")
	if err := os.WriteFile(ran, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.Binary = ran
	for _, host := range []string{"127.0.0.1:6789\nkeyring = /etc/shadow", "127.0.0.1:6789\r", "\n"} {
		conn := liveConn()
		conn.MonHost = host
		_, err := r.Run(ctx, conn, Command{Name: "mgr stat", Kind: Read, Args: []string{"mgr", "stat"}})
		if err == nil || !strings.Contains(err.Error(), "mon_host") || !strings.Contains(err.Error(), "line break") {
			t.Errorf("mon_host %q: %v; want a refusal naming mon_host", host, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the CLI ran with a mon_host holding a line break")
	}
}

// A CLI older than the cluster cannot read its admin key (Tentacle's new key
// type, seen with the 16.2.15 CLI against a 20.2.4 cluster): the error says
// so and what to do, and still quotes no key.
func TestKeyOfANewerRelease(t *testing.T) {
	cli := filepath.Join(t.TempDir(), "ceph")
	script := "#!/bin/sh\necho 'auth: error parsing file /dev/fd/4: error setting modifier for [client.admin] type=key val=AQBGm2VnSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRE0A==: Malformed input' >&2\nexit 1\n"
	if err := os.WriteFile(cli, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := (&Runner{Binary: cli, Timeout: 10 * time.Second}).Run(t.Context(), liveConn(), Command{Name: "auth get-key", Kind: Read})
	if err == nil || !strings.Contains(err.Error(), "cannot read the admin key") || !strings.Contains(err.Error(), "at least as new as the cluster") {
		t.Errorf("error %v: want it to name a CLI older than the cluster", err)
	}
	if err != nil && strings.Contains(err.Error(), "SECRET") {
		t.Errorf("the error quotes the key: %v", err)
	}
}

func liveMonitor(t *testing.T, timeout time.Duration) *Monitor {
	t.Helper()
	py, err := PythonOf("ceph")
	if err != nil {
		t.Fatal(err)
	}
	m := &Monitor{Python: py, Timeout: timeout}
	t.Cleanup(m.Close)
	return m
}

// The kept connection answers what the CLI answers, and the helper started
// once serves every read after.
func TestMonitorMgrStat(t *testing.T) {
	ctx := t.Context()
	m := liveMonitor(t, 5*time.Second)
	want, err := (&Runner{Timeout: 20 * time.Second}).Run(ctx, liveConn(), Command{Name: "mgr stat", Kind: Read, Args: []string{"mgr", "stat"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		st, err := m.MgrStat(ctx, liveConn())
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if !st.Available || st.ActiveName != live.MgrID || !strings.Contains(string(want), `"active_name":"`+st.ActiveName+`"`) {
			t.Fatalf("read %d: %+v; the CLI says %s", i, st, want)
		}
	}
	p := m.proc
	if _, err := m.MgrStat(ctx, liveConn()); err != nil || m.proc != p {
		t.Fatalf("a second read started another helper (%v)", err)
	}
	// The admin key reached the helper through its stdin, not its arguments
	// or environment.
	key, _ := adminKey(liveConn().AdminKeyring)
	for _, f := range []string{"cmdline", "environ"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", p.pid, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), key) {
			t.Errorf("the admin key is in the helper's %s", f)
		}
	}
	// Killed, it is started again by the next read.
	if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if st, err := m.MgrStat(ctx, liveConn()); err != nil || st.ActiveName != live.MgrID || m.proc == p {
		t.Fatalf("after the helper was killed: %+v, %v", st, err)
	}
}

// A mon that accepts and never answers costs its own read the timeout, and
// holds no read of another cluster back.
func TestMonitorBlackholedMon(t *testing.T) {
	ctx := t.Context()
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := hole.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // accepted, never answered
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	// The timeout is long against a healthy read (milliseconds), so the
	// order of the answers says whether the dark read held the others back,
	// however slow the machine.
	timeout := 10 * time.Second
	m := liveMonitor(t, timeout)
	if _, err := m.MgrStat(ctx, liveConn()); err != nil { // the helper is up
		t.Fatal(err)
	}
	dark := liveConn()
	dark.Cluster, dark.MonHost = "dark", "v2:"+hole.Addr().String()
	start := time.Now()
	errc := make(chan error, 1)
	go func() {
		_, err := m.MgrStat(ctx, dark)
		errc <- err
	}()
	for range 5 {
		if _, err := m.MgrStat(ctx, liveConn()); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-errc:
		t.Fatalf("the dark read ended (%v) before 5 reads of a healthy cluster did: it held them back", err)
	default:
	}
	err = <-errc
	if !IsUnavailable(err) {
		t.Fatalf("blackholed mon: %v, want Unavailable", err)
	}
	// The read's own bound (the helper's timeout for the connection, the
	// Go side's for the answer), not the machine's speed.
	if d := time.Since(start); d < timeout/2 || d > 2*timeout+2*time.Second {
		t.Errorf("blackholed read took %s with a %s timeout", d, timeout)
	}
	t.Logf("blackholed read: %v after %s", err, time.Since(start).Round(10*time.Millisecond))
}

// Without an interpreter the Runner asks the CLI, and says nothing worse.
func TestMonitorMissingFallsBackToCLI(t *testing.T) {
	r := &Runner{Timeout: 20 * time.Second, Monitor: &Monitor{Python: "/nonexistent/python3"}}
	if _, err := r.Monitor.MgrStat(t.Context(), liveConn()); !errors.Is(err, ErrNoMonitor) {
		t.Fatalf("no interpreter: %v, want ErrNoMonitor", err)
	}
	st, err := r.MgrStat(t.Context(), liveConn())
	if err != nil || st.ActiveName != live.MgrID {
		t.Fatalf("fallback to the CLI: %+v, %v", st, err)
	}
}

// TestFacts: a fresh cluster holds its own release as both floors, runs its
// one mon and one mgr on the installed release, has no standby, and says
// its health; the CLI and the kept connection read the same.
func TestFacts(t *testing.T) {
	ctx := t.Context()
	cli, err := (&Runner{}).CLIVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	name := contract.ReleaseNames[cli.Major]
	for how, r := range map[string]*Runner{"CLI": {}, "kept connection": {Monitor: liveMonitor(t, 5*time.Second)}} {
		f, err := r.Facts(ctx, liveConn())
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		if f.RequireOSDRelease != name || f.MinMonRelease != name || f.Standbys != 0 ||
			!slices.Equal(f.Mons, []Version{cli}) || !slices.Equal(f.Mgrs, []Version{cli}) ||
			!slices.Contains([]string{"HEALTH_OK", "HEALTH_WARN", "HEALTH_ERR"}, f.Health) {
			t.Errorf("%s: facts of a fresh %s cluster: %+v; want both floors %q, no standby, one release %s, a health status", how, cli, f, name, cli)
		}
	}
}

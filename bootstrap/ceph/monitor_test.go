// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package ceph

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

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
	ctx := context.Background()
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
	ctx := context.Background()
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
	if _, err := r.Monitor.MgrStat(context.Background(), liveConn()); !errors.Is(err, ErrNoMonitor) {
		t.Fatalf("no interpreter: %v, want ErrNoMonitor", err)
	}
	st, err := r.MgrStat(context.Background(), liveConn())
	if err != nil || st.ActiveName != live.MgrID {
		t.Fatalf("fallback to the CLI: %+v, %v", st, err)
	}
}

func TestPythonOf(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, tc := range map[string]struct{ script, want string }{
		"python shebang":   {"#! /usr/bin/python3\nimport rados\n", "/usr/bin/python3"},
		"env shebang":      {"#!/usr/bin/env python3.11\n", "python3.11"},
		"wrapper, beside":  {"#!/bin/sh\nexec bwrap ...\n", dir + "/ceph-python3"},
		"binary, no match": {"\x7fELF", ""},
	} {
		t.Run(name, func(t *testing.T) {
			os.Remove(dir + "/ceph-python3")
			if strings.Contains(tc.want, "ceph-python3") {
				write("ceph-python3", "#!/bin/sh\n")
			}
			got, err := PythonOf(write("ceph", tc.script))
			if got != tc.want || (tc.want == "") != (err != nil) {
				t.Errorf("PythonOf = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestAdminKey(t *testing.T) {
	for name, tc := range map[string]struct{ keyring, want string }{
		"rook's":    {"[client.admin]\n\tkey = AQBx==\n\tcaps mon = \"allow *\"\n", "AQBx=="},
		"no spaces": {"[client.admin]\nkey=AQBy==\n", "AQBy=="},
		"no key":    {"[client.admin]\n", ""},
	} {
		got, err := adminKey([]byte(tc.keyring))
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("%s: %q, %v", name, got, err)
		}
		if err != nil && strings.Contains(err.Error(), "AQ") {
			t.Errorf("%s: the error carries key material", name)
		}
	}
}

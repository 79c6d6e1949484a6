// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewServerClientCA: a client CA file that cannot be read, or holds no
// certificate, stops the server from being built, naming the file; the
// server never starts open to every caller by mistake.
func TestNewServerClientCA(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string]string{"missing": filepath.Join(dir, "missing.pem"), "no PEM": empty} {
		t.Run(name, func(t *testing.T) {
			if _, err := NewServer(ServerOptions{ClientCAFile: file}); err == nil || !strings.Contains(err.Error(), filepath.Base(file)) {
				t.Errorf("NewServer with client CA %s: %v; want an error naming it", file, err)
			}
		})
	}
	if _, err := NewServer(ServerOptions{}); err != nil {
		t.Errorf("NewServer without a client CA: %v", err)
	}
}

// TestNewServerConnectionCaps: caps that cannot hold (a negative one, or a
// per-source cap over the total) stop the server from being built, naming
// both flags; 0 takes the defaults.
func TestNewServerConnectionCaps(t *testing.T) {
	for _, o := range []ServerOptions{{MaxConnsPerSource: -1}, {MaxConnsPerSource: 200, MaxConns: 100}, {MaxConns: DefaultMaxConnsPerSource - 1}} {
		if _, err := NewServer(o); err == nil || !strings.Contains(err.Error(), "--max-connections-per-source") || !strings.Contains(err.Error(), "--max-connections=") {
			t.Errorf("NewServer(%+v): %v; want an error naming both flags", o, err)
		}
	}
	srv, err := NewServer(ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := srv.(*server); s.o.MaxConnsPerSource != DefaultMaxConnsPerSource || s.o.MaxConns != DefaultMaxConns {
		t.Errorf("caps %d and %d, want the defaults", s.o.MaxConnsPerSource, s.o.MaxConns)
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTLSFloor: a client that offers only TLS 1.1 or 1.0 gets no handshake;
// TLS 1.2 does; HTTP/2 is off unless asked for.
func TestTLSFloor(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	srv.TLS = &tls.Config{}
	for _, o := range TLSOptions(false) {
		o(srv.TLS)
	}
	srv.StartTLS()
	defer srv.Close()
	for name, tc := range map[string]struct {
		max uint16
		ok  bool
	}{"TLS 1.0": {tls.VersionTLS10, false}, "TLS 1.1": {tls.VersionTLS11, false}, "TLS 1.2": {tls.VersionTLS12, true}, "TLS 1.3": {tls.VersionTLS13, true}} {
		t.Run(name, func(t *testing.T) {
			c, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS10, MaxVersion: tc.max}) //nolint:gosec // probing the server's floor
			if err == nil {
				defer c.Close()
				if p := c.ConnectionState().NegotiatedProtocol; p == "h2" {
					t.Errorf("negotiated HTTP/2")
				}
			}
			if (err == nil) != tc.ok {
				t.Errorf("handshake error %v, want success %v", err, tc.ok)
			}
		})
	}
}

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

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package servingtls

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestTLSFloor: a client that offers only TLS 1.1 or 1.0 gets no handshake;
// TLS 1.2 does; HTTP/2 is off unless asked for.
func TestTLSFloor(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	srv.TLS = &tls.Config{}
	for _, o := range Options(false) {
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

// TestHTTP2OnlyWhenAsked: a client offering h2 gets it only from a server
// built with enableHTTP2.
func TestHTTP2OnlyWhenAsked(t *testing.T) {
	for _, enable := range []bool{false, true} {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		srv.TLS = &tls.Config{NextProtos: []string{"h2", "http/1.1"}}
		for _, o := range Options(enable) {
			o(srv.TLS)
		}
		srv.StartTLS()
		c, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}}) //nolint:gosec // probing the server's protocols
		if err != nil {
			t.Fatal(err)
		}
		if got := c.ConnectionState().NegotiatedProtocol == "h2"; got != enable {
			t.Errorf("Options(%v): negotiated %q", enable, c.ConnectionState().NegotiatedProtocol)
		}
		c.Close()
		srv.Close()
	}
}

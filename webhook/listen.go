// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// server is controller-runtime's webhook server (its mux, registration and
// leader-election answer) serving on a listener that caps connections
// (connLimiter), which DefaultServer cannot be given: its Start and
// StartedChecker are replaced, with the same TLS, certificate reloading and
// HTTP settings.
type server struct {
	*ctrlwebhook.DefaultServer
	o       ServerOptions
	tlsOpts []func(*tls.Config)
	started atomic.Bool
}

// ReadHeaderTimeout cuts a caller that has not finished its TLS handshake
// and headers by then (controller-runtime's setting): how long an idle
// connection the caps let in holds its place.
const ReadHeaderTimeout = 32 * time.Second

// Start serves until ctx ends, then drains for up to a minute.
func (s *server) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("webhook-server")
	cfg := &tls.Config{NextProtos: []string{"h2"}}
	for _, op := range s.tlsOpts {
		op(cfg)
	}
	watcher, err := certwatcher.New(filepath.Join(s.o.CertDir, "tls.crt"), filepath.Join(s.o.CertDir, "tls.key"))
	if err != nil {
		return err
	}
	cfg.GetCertificate = watcher.GetCertificate
	go func() {
		if err := watcher.Start(ctx); err != nil {
			log.Error(err, "certificate watcher")
		}
	}()
	ln, err := net.Listen("tcp", net.JoinHostPort(s.o.Host, strconv.Itoa(s.o.Port)))
	if err != nil {
		return err
	}
	ln = tls.NewListener(newConnLimiter(ln, s.o.MaxConnsPerSource, s.o.MaxConns), cfg)
	log.Info("Serving webhook server", "host", s.o.Host, "port", s.o.Port,
		"maxConnsPerSource", s.o.MaxConnsPerSource, "maxConns", s.o.MaxConns)
	// controller-runtime's settings (internal/httpserver).
	srv := &http.Server{
		Handler:           s.WebhookMux(),
		MaxHeaderBytes:    1 << 20,
		IdleTimeout:       90 * time.Second,
		ReadHeaderTimeout: ReadHeaderTimeout,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := srv.Shutdown(shutdown); err != nil {
			log.Error(err, "shutting down the webhook server")
		}
	}()
	s.started.Store(true)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-drained
	return nil
}

// StartedChecker is ready once the server accepts a TLS connection.
func (s *server) StartedChecker() healthz.Checker {
	return func(*http.Request) error {
		if !s.started.Load() {
			return errors.New("webhook server has not been started yet")
		}
		d := &net.Dialer{Timeout: 10 * time.Second}
		conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort(s.o.Host, strconv.Itoa(s.o.Port)), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reachability only
		if err != nil {
			return fmt.Errorf("webhook server is not reachable: %w", err)
		}
		return conn.Close()
	}
}

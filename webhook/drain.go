// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"
)

// Drain turns a termination signal into a graceful exit for a replica behind
// a Service. From the signal on, the readiness check fails, so the replica
// leaves the Service's endpoints, and every answer carries "Connection:
// close", so the API server's kept-alive connections end after their current
// request instead of being cut at shutdown; for Delay the replica still serves
// what is routed to it (kube-proxy and the endpoints lag behind), then its
// context ends and the webhook server shuts down, finishing requests in
// flight.
type Drain struct {
	Delay    time.Duration
	draining atomic.Bool
}

// Context is parent, ending Delay after it does.
func (d *Drain) Context(parent context.Context) context.Context {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	go func() {
		<-parent.Done()
		d.draining.Store(true)
		time.Sleep(d.Delay)
		cancel()
	}()
	return ctx
}

// Ready is the readiness check: failing once draining.
func (d *Drain) Ready(*http.Request) error {
	if d.draining.Load() {
		return errors.New("shutting down: draining")
	}
	return nil
}

// Wrap closes the connection after each answer once draining.
func (d *Drain) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

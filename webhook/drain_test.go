// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestDrain(t *testing.T) {
	d := &Drain{Delay: 300 * time.Millisecond}
	parent, stop := context.WithCancel(t.Context())
	ctx := d.Context(parent)
	h := d.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	answer := func() string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
		return rec.Header().Get("Connection")
	}
	if err := d.Ready(nil); err != nil || answer() != "" {
		t.Fatalf("before the signal: ready %v, Connection %q", err, answer())
	}
	stop()
	time.Sleep(50 * time.Millisecond)
	if err := d.Ready(nil); err == nil {
		t.Error("still ready after the signal")
	}
	if answer() != "close" {
		t.Error("connections kept alive while draining")
	}
	if ctx.Err() != nil {
		t.Error("stopped serving at once; want it to drain first")
	}
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("never stopped")
	}
}

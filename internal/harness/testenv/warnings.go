// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Warnings collects the warnings the API server passes on from admission.
type Warnings struct {
	mu   sync.Mutex
	seen []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (w *Warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

// Take returns the warnings collected since the last Take.
func (w *Warnings) Take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// WarnedClient is a cluster admin's client on scheme whose warnings are
// collected.
func (a *APIServer) WarnedClient(t testing.TB, scheme *runtime.Scheme) (client.Client, *Warnings) {
	t.Helper()
	seen := &Warnings{}
	cfg := rest.CopyConfig(a.Config)
	cfg.WarningHandler = seen
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, seen
}

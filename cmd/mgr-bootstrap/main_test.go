// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"

	"github.com/rook-mgr/mgr-webhook/bootstrap"
)

// TestRefusesItsOwnNamespaceAsACephNamespace: bound there, the controller
// could read the webhook's certificates; it stops before any connection and
// says what to change.
func TestRefusesItsOwnNamespaceAsACephNamespace(t *testing.T) {
	for _, ns := range []string{"mgr-webhook-system", "rook-ceph,mgr-webhook-system"} {
		o := options{Options: bootstrap.DefaultOptions(), caps: "mgr-profile", namespaces: ns, set: map[string]bool{}}
		o.Namespace = "mgr-webhook-system"
		err := run(o)
		if err == nil || !strings.Contains(err.Error(), "--namespaces lists mgr-webhook-system, the controller's own namespace") {
			t.Errorf("--namespaces=%s: %v; want the own namespace refused", ns, err)
		}
	}
}

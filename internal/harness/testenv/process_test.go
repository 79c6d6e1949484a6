// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortOutsideTheEphemeralRange: the ports handed out are never ones
// the kernel may pick as an outgoing connection's source port, and are free.
func TestFreePortOutsideTheEphemeralRange(t *testing.T) {
	lo, hi := portsBelowEphemeral()
	seen := map[int]bool{}
	for range 50 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if p < lo || p >= hi {
			t.Fatalf("port %d outside [%d, %d)", p, lo, hi)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d not free: %v", p, err)
		}
		l.Close()
	}
	if len(seen) < 40 {
		t.Errorf("50 calls gave %d ports: not random enough to keep parallel tests apart", len(seen))
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package cephtest

import (
	"context"
	"testing"
)

func TestStartStop(t *testing.T) {
	c, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	key, err := c.GetKey(context.Background(), "mgr.a")
	if err != nil || len(key) != 40 {
		t.Fatalf("mgr.a key %q: %v", key, err)
	}
}

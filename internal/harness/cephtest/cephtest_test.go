// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package cephtest

import (
	"encoding/base64"
	"testing"
)

func TestStartStop(t *testing.T) {
	c, err := Start(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	key, err := c.GetKey(t.Context(), "mgr.a")
	// A cephx key: type, creation time, length and secret, base64 — 16
	// secret bytes up to Squid, 32 from Tentacle (its new key type).
	blob, decodeErr := base64.StdEncoding.DecodeString(key)
	if err != nil || decodeErr != nil || (len(blob) != 28 && len(blob) != 44) {
		t.Fatalf("mgr.a key %q (%d bytes): %v %v", key, len(blob), err, decodeErr)
	}
}

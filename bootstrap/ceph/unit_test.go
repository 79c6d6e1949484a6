// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build unit

package ceph

// startLive starts nothing: built with -tags unit, the tests that need a
// Ceph daemon (live_test.go) are left out.
func startLive() (stop func(), err error) { return func() {}, nil }

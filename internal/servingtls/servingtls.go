// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package servingtls is the one TLS configuration of every port the
// components serve: the webhook's and both metrics endpoints.
package servingtls

import "crypto/tls"

// Options sets TLS 1.2 as the floor and, unless enableHTTP2, serves HTTP/1.1
// only (HTTP/2 exposed servers to rapid-reset attacks, CVE-2023-44487).
func Options(enableHTTP2 bool) []func(*tls.Config) {
	return []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion = tls.VersionTLS12
		if !enableHTTP2 {
			c.NextProtos = []string{"http/1.1"}
		}
	}}
}

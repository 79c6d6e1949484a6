// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// TestSelfSignedLifetimes: the self-signed mode refuses lifetimes its
// rotation cannot keep (each case just inside and just outside its bound).
func TestSelfSignedLifetimes(t *testing.T) {
	for name, tc := range map[string]struct {
		ca, cert time.Duration
		want     string // "" when accepted
	}{
		"defaults":                        {90 * 24 * time.Hour, 90 * 24 * time.Hour, ""},
		"a third just over settle+check":  {time.Hour, 34 * time.Second, ""},
		"a third equal to settle+check":   {time.Hour, 33 * time.Second, "a third of it must exceed --cert-settle (10s) + --cert-check-interval (1s)"},
		"CA as long as the certificate":   {time.Hour, time.Hour, ""},
		"CA shorter than the certificate": {time.Hour - time.Second, time.Hour, "--ca-lifetime 59m59s is shorter than --cert-lifetime 1h0m0s"},
	} {
		t.Run(name, func(t *testing.T) {
			o := options{namespace: "mgr-webhook-system", caLifetime: tc.ca, certLifetime: tc.cert, certSettle: 10 * time.Second, certCheckInterval: time.Second}
			_, _, err := selfSigned(&rest.Config{Host: "https://127.0.0.1:1"}, runtime.NewScheme(), o)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v; want one saying %q", err, tc.want)
			}
		})
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package ceph

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"unicode/utf8"
)

// TestFailedModules: each module of MGR_MODULE_ERROR with Ceph's error, from
// the details of `health detail` or the summary of `ceph status`; a count
// summary names no module, and other checks are not read.
func TestFailedModules(t *testing.T) {
	for name, tc := range map[string]struct {
		json string
		want map[string]string
	}{
		"healthy":       {`{"status":"HEALTH_OK","checks":{}}`, nil},
		"another check": {`{"status":"HEALTH_WARN","checks":{"MON_DISK_LOW":{"summary":{"message":"Module 'x' has failed: no"}}}}`, nil},
		"one, summary only": {`{"checks":{"MGR_MODULE_ERROR":{"summary":{"message":"Module 'prometheus' has failed: OSError(98, 'Address already in use')"}}}}`,
			map[string]string{"prometheus": "OSError(98, 'Address already in use')"}},
		"two, details": {`{"checks":{"MGR_MODULE_ERROR":{"summary":{"message":"2 mgr modules have failed"},"detail":[` +
			`{"message":"Module 'dashboard' has failed: Timeout('Port 8443 not free on 127.0.0.1.')"},{"message":"Module 'rook' has failed: x: y"}]}}}`,
			map[string]string{"dashboard": "Timeout('Port 8443 not free on 127.0.0.1.')", "rook": "x: y"}},
		"count only":    {`{"checks":{"MGR_MODULE_ERROR":{"summary":{"message":"2 mgr modules have failed"}}}}`, map[string]string{}},
		"no error text": {`{"checks":{"MGR_MODULE_ERROR":{"summary":{"message":"Module 'balancer' has failed"}}}}`, map[string]string{"balancer": ""}},
	} {
		t.Run(name, func(t *testing.T) {
			var h health
			if err := json.Unmarshal([]byte(tc.json), &h); err != nil {
				t.Fatal(err)
			}
			if got := h.failedModules(); !maps.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("failedModules() = %#v, want %#v", got, tc.want)
			}
		})
	}
}

// TestInsecureKeys: each entity of AUTH_INSECURE_SERVICE_KEY_TYPE's details
// (as Tentacle 20.2.4 words them), once and sorted; the summary and other
// checks name none.
func TestInsecureKeys(t *testing.T) {
	for name, tc := range map[string]struct {
		json string
		want []string
	}{
		"healthy":       {`{"status":"HEALTH_OK","checks":{}}`, nil},
		"another check": {`{"checks":{"AUTH_INSECURE_CLIENT_KEY_TYPE":{"detail":[{"message":"entity client.x using insecure key type: aes"}]}}}`, nil},
		"summary only":  {`{"checks":{"AUTH_INSECURE_SERVICE_KEY_TYPE":{"summary":{"message":"2 auth service entities with insecure key types"}}}}`, nil},
		"two, details": {`{"checks":{"AUTH_INSECURE_SERVICE_KEY_TYPE":{"summary":{"message":"3 auth service entities with insecure key types"},"detail":[` +
			`{"message":"entity mgr.x using insecure key type: aes"},{"message":"entity mon. using insecure key type: aes"},` +
			`{"message":"entity mgr.x using insecure key type: aes"},{"message":"something else"}]}}}`, []string{"mgr.x", "mon."}},
	} {
		t.Run(name, func(t *testing.T) {
			var h health
			if err := json.Unmarshal([]byte(tc.json), &h); err != nil {
				t.Fatal(err)
			}
			if got := h.insecureKeys(); !slices.Equal(got, tc.want) {
				t.Errorf("insecureKeys() = %#v, want %#v", got, tc.want)
			}
		})
	}
}

// TestCut: at most n bytes, cut at a character's start, whole when it fits.
func TestCut(t *testing.T) {
	for name, tc := range map[string]struct {
		s    string
		n    int
		want string
	}{
		"fits":           {"abc", 3, "abc"},
		"cut":            {"abcd", 3, "abc"},
		"mid-character":  {"aé", 2, "a"}, // é is 2 bytes: 1 + 2 > 2
		"at a character": {"éa", 2, "é"},
		"nothing fits":   {"é", 1, ""},
		"empty":          {"", 0, ""},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Cut(tc.s, tc.n); got != tc.want || !utf8.ValidString(got) {
				t.Errorf("Cut(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
			}
		})
	}
}

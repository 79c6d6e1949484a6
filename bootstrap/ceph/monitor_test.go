// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package ceph

import (
	"os"
	"strings"
	"testing"
)

func TestPythonOf(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, tc := range map[string]struct{ script, want string }{
		"python shebang":   {"#! /usr/bin/python3\nimport rados\n", "/usr/bin/python3"},
		"env shebang":      {"#!/usr/bin/env python3.11\n", "python3.11"},
		"wrapper, beside":  {"#!/bin/sh\nexec bwrap ...\n", dir + "/ceph-python3"},
		"binary, no match": {"\x7fELF", ""},
		// Truncated #! lines read to the end of their words, never past.
		"bare #!":     {"#!\n", ""},
		"env alone":   {"#!/usr/bin/env\n", ""},
		"env, beside": {"#!/usr/bin/env\n", dir + "/ceph-python3"},
	} {
		t.Run(name, func(t *testing.T) {
			os.Remove(dir + "/ceph-python3")
			if strings.Contains(tc.want, "ceph-python3") {
				write("ceph-python3", "#!/bin/sh\n")
			}
			got, err := PythonOf(write("ceph", tc.script))
			if got != tc.want || (tc.want == "") != (err != nil) {
				t.Errorf("PythonOf = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestAdminKey(t *testing.T) {
	for name, tc := range map[string]struct{ keyring, want string }{
		"rook's":    {"[client.admin]\n\tkey = AQBx==\n\tcaps mon = \"allow *\"\n", "AQBx=="},
		"no spaces": {"[client.admin]\nkey=AQBy==\n", "AQBy=="},
		"no key":    {"[client.admin]\n", ""},
	} {
		got, err := adminKey([]byte(tc.keyring))
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("%s: %q, %v", name, got, err)
		}
		if err != nil && strings.Contains(err.Error(), "AQ") {
			t.Errorf("%s: the error carries key material", name)
		}
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	for name, tc := range map[string]struct {
		stream string
		code   int
		says   string
	}{
		"all pass": {`{"Action":"run","Package":"p","Test":"T"}
{"Action":"pass","Package":"p","Test":"T"}
{"Action":"pass","Package":"p"}
{"Action":"skip","Package":"q"}`, 0, "1 run, 1 passed"},
		"a skip fails": {`{"Action":"skip","Package":"p","Test":"T"}
{"Action":"pass","Package":"p"}`, 1, "SKIPPED (not allowed): p.T"},
		"a package with tests that ran none fails": {`{"Action":"run","Package":"p","Test":"T"}
{"Action":"pass","Package":"p","Test":"T"}
{"Action":"pass","Package":"p"}
{"Action":"output","Package":"e","Output":"ok  \te\t0.01s [no tests to run]\n"}
{"Action":"pass","Package":"e"}`, 1, "NO TESTS RAN (not allowed): e"},
		"build errors are shown and fail": {`{"ImportPath":"p [p.test]","Action":"build-output","Output":"p/x_test.go:3:1: undefined: foo\n"}
{"ImportPath":"p [p.test]","Action":"build-fail"}
{"Action":"start","Package":"p"}
{"Action":"fail","Package":"p","FailedBuild":"p [p.test]"}`, 1, "undefined: foo"},
		"nothing at all fails": {``, 1, "0 run"},
		"a failure in a named run names it": {`{"Action":"pass","Package":"p","Test":"T"}
{"Action":"pass","Package":"p"}
== run: Ceph 20.2.4 (sid)
{"Action":"fail","Package":"p","Test":"T"}
{"Action":"fail","Package":"p"}`, 1, "FAILED: p.T [Ceph 20.2.4 (sid)]"},
		"a named run counts its own tests": {`{"Action":"pass","Package":"p","Test":"T"}
{"Action":"pass","Package":"p"}
== run: Ceph 20.2.4 (sid)
{"Action":"pass","Package":"p","Test":"T"}
{"Action":"pass","Package":"p","Test":"U"}
{"Action":"pass","Package":"p"}`, 0, "Ceph 20.2.4 (sid): 2 tests"},
		"a package of a named run that ran none fails": {`{"Action":"pass","Package":"p","Test":"T"}
{"Action":"pass","Package":"p"}
== run: Ceph 20.2.4 (sid)
{"Action":"pass","Package":"p"}`, 1, "NO TESTS RAN (not allowed): p [Ceph 20.2.4 (sid)]"},
		"a named run where go test never started fails": {`== run: Ceph 16.2.15 (host): every package
go: updates to go.mod needed; to update it:
	go mod tidy
== run: Ceph 20.2.4 (sid)
{"Action":"pass","Package":"p","Test":"T"}
{"Action":"pass","Package":"p"}`, 1, `NO TESTS RAN (not allowed) in run "Ceph 16.2.15 (host): every package"`},
	} {
		t.Run(name, func(t *testing.T) {
			var out strings.Builder
			if code := summarize(strings.NewReader(tc.stream), &out); code != tc.code {
				t.Errorf("exit %d, want %d:\n%s", code, tc.code, out.String())
			}
			if !strings.Contains(out.String(), tc.says) {
				t.Errorf("output lacks %q:\n%s", tc.says, out.String())
			}
		})
	}
}

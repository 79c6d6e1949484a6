// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mgrctl

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/rook-mgr/mgr-webhook/mutate"
)

const fsid = "--fsid=dcef92d7-1f6a-4b9d-8ed0-0037d537d00b"

func run(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

func minimal(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../manifests/examples/minimal-mgr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestOffline: with --fsid nothing is read from a cluster; each command's
// exit status says what it found.
func TestOffline(t *testing.T) {
	privileged := strings.Replace(minimal(t), "image: quay.io/ceph/ceph:v19.2.3", "image: quay.io/ceph/ceph:v19.2.3\n          securityContext: {privileged: true}", 1)
	if privileged == minimal(t) {
		t.Fatal("the example's image line moved; update this test")
	}
	for name, tc := range map[string]struct {
		stdin  string
		args   []string
		code   int
		stdout string // a substring
		stderr string // a substring
	}{
		"inject":             {minimal(t), []string{"inject", "-f", "-", fsid}, 0, "--fsid=dcef92d7", "policy: the built-in policy"},
		"validate":           {minimal(t), []string{"validate", "-f", "-", fsid}, 0, "deployment/rook-ceph-mgr-a in rook-ceph): admitted", ""},
		"validate, refused":  {privileged, []string{"validate", fsid, "-f", "-"}, 1, "spec.template.spec.containers[0].securityContext.privileged: Forbidden", ""},
		"inject, refused":    {privileged, []string{"inject", "-f", "-", fsid}, 2, "", "securityContext.privileged"},
		"diff":               {minimal(t), []string{"diff", "-f", "-", fsid}, 1, "+        - --fsid=dcef92d7", ""},
		"no file":            {"", []string{"inject", fsid}, 2, "", "name a file with -f"},
		"unknown command":    {"", []string{"apply"}, 2, "", `unknown command "apply"`},
		"not a Deployment":   {"", []string{"diff", "pod/x", fsid}, 2, "", "name a Deployment as deploy/NAME"},
		"version":            {"", []string{"version"}, 0, "mgrctl", ""},
		"a MgrPolicy object": {minimal(t), []string{"validate", "-f", "-", fsid, "--policy", "../../manifests/examples/mgrpolicy.yaml"}, 0, "admitted", "policy: ../../manifests/examples/mgrpolicy.yaml"},
	} {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := run(t, tc.stdin, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, stdout with %q, stderr with %q", code, out, errOut, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

func TestParsePolicy(t *testing.T) {
	data, err := os.ReadFile("../../manifests/examples/mgrpolicy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePolicy(data)
	if err != nil {
		t.Fatal(err)
	}
	if p.Hash() != mutate.DefaultPolicy().Hash() {
		t.Errorf("the example MgrPolicy (the built-in values) hashes to %s, the built-in to %s", p.Hash(), mutate.DefaultPolicy().Hash())
	}
	bad := strings.Replace(string(data), "minimumCephVersion: \"19.2.0\"", "minimumCephVersion: \"sixteen\"", 1)
	if _, err := ParsePolicy([]byte(bad)); err == nil || !strings.Contains(err.Error(), "spec.images.minimumCephVersion") {
		t.Errorf("an invalid MgrPolicy: %v, want an error naming spec.images.minimumCephVersion", err)
	}
	if _, err := ParsePolicy([]byte("apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nbogus: 1\n")); err == nil {
		t.Error("a policy file with an unknown field was accepted")
	}
}

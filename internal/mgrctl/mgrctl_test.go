// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mgrctl

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/mutate"
)

const fsid = "--fsid=dcef92d7-1f6a-4b9d-8ed0-0037d537d00b"

func run(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

// mgrNamed is the example mgr as mgr id.
func mgrNamed(t *testing.T, id string) string {
	t.Helper()
	return strings.NewReplacer("rook-ceph-mgr-a", "rook-ceph-mgr-"+id, "mgr: a", "mgr: "+id).Replace(minimal(t))
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
// exit code is the table's (ExitOK, ExitRefused, ExitUsage).
func TestOffline(t *testing.T) {
	privileged := strings.Replace(minimal(t), "image: quay.io/ceph/ceph:v19.2.3", "image: quay.io/ceph/ceph:v19.2.3\n          securityContext: {privileged: true}", 1)
	if privileged == minimal(t) {
		t.Fatal("the example's image line moved; update this test")
	}
	notMgr := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: rook-ceph}\n"
	for name, tc := range map[string]struct {
		stdin  string
		args   []string
		code   int
		stdout string // a substring
		stderr string // a substring
	}{
		"inject":                    {minimal(t), []string{"inject", "-f", "-", fsid}, ExitOK, "--fsid=dcef92d7", "policy: the built-in policy"},
		"validate":                  {minimal(t), []string{"validate", "-f", "-", fsid}, ExitOK, "deployment/rook-ceph-mgr-a in rook-ceph): admitted", ""},
		"validate, refused":         {privileged, []string{"validate", fsid, "-f", "-"}, ExitRefused, "spec.template.spec.containers[0].securityContext.privileged: Forbidden", ""},
		"inject, refused":           {privileged, []string{"inject", "-f", "-", fsid}, ExitRefused, "", "securityContext.privileged"},
		"diff":                      {minimal(t), []string{"diff", "-f", "-", fsid}, ExitRefused, "+            - --fsid=dcef92d7", ""},
		"validate, no mgr":          {notMgr, []string{"validate", "-f", "-", fsid}, ExitRefused, "", "no mgr Deployment (apps/v1 Deployment labelled app=rook-ceph-mgr) in -"},
		"validate, --allow-empty":   {notMgr, []string{"validate", "-f", "-", fsid, "--allow-empty"}, ExitOK, "", ""},
		"inject, no mgr":            {notMgr, []string{"inject", "-f", "-", fsid}, ExitOK, notMgr, ""},
		"no file":                   {"", []string{"inject", fsid}, ExitUsage, "", "name the input with -f"},
		"a missing file":            {"", []string{"validate", "-f", "/nonexistent.yaml", fsid}, ExitUsage, "", "/nonexistent.yaml"},
		"not YAML":                  {"a: [\n", []string{"validate", "-f", "-", fsid}, ExitUsage, "", "not YAML"},
		"unknown command":           {"", []string{"apply"}, ExitUsage, "", `unknown command "apply"`},
		"unknown flag":              {"", []string{"inject", "--bogus"}, ExitUsage, "", "unknown flag: --bogus"},
		"an unknown output":         {minimal(t), []string{"validate", "-f", "-", fsid, "-o", "table"}, ExitUsage, "", `unknown output format "table"`},
		"not a Deployment":          {"", []string{"diff", "pod/x", fsid}, ExitUsage, "", "name a Deployment as deploy/NAME"},
		"check without a name":      {"", []string{"check"}, ExitUsage, "", "name one Deployment"},
		"version":                   {"", []string{"version"}, ExitOK, "mgrctl", ""},
		"--version":                 {"", []string{"--version"}, ExitOK, "mgrctl", ""},
		"--help":                    {"", []string{"--help"}, ExitOK, "Exit codes", ""},
		"inject --help":             {"", []string{"inject", "--help"}, ExitOK, "--filename", ""},
		"completion":                {"", []string{"completion", "bash"}, ExitOK, "bash completion", ""},
		"a MgrPolicy object":        {minimal(t), []string{"validate", "-f", "-", fsid, "--policy", "../../manifests/examples/mgrpolicy.yaml"}, ExitOK, "admitted", "policy: ../../manifests/examples/mgrpolicy.yaml"},
		"a file and a directory":    {"", []string{"validate", "-f", "../../manifests/examples/minimal-mgr.yaml", "-f", "../../manifests/examples", fsid}, ExitOK, "../../manifests/examples/minimal-mgr.yaml: document 1", ""},
		"a directory without -R":    {"", []string{"validate", "-f", "../../manifests", fsid}, ExitUsage, "", "-R reads its subdirectories"},
		"stdin twice":               {minimal(t), []string{"validate", "-f", "-", "-f", "-", fsid}, ExitUsage, "", "given twice"},
		"a kubeconfig that answers": {minimal(t), []string{"validate", "-f", "-", "--kubeconfig", "/nonexistent/kubeconfig"}, ExitUnreachable, "", "no cluster to read"},
	} {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := run(t, tc.stdin, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, stdout with %q, stderr with %q", code, out, errOut, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

// TestEveryFileIsRead: -f repeated reads every file, in order, each judged
// (once, only the last one was).
func TestEveryFileIsRead(t *testing.T) {
	dir := t.TempDir()
	b := mgrNamed(t, "b")
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fa, fb := write("a.yaml", minimal(t)), write("b.yaml", b)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	write("sub/c.yml", mgrNamed(t, "c"))
	write("notes.txt", "not a manifest")

	out, errOut, code := run(t, "", "validate", "-f", fa, "-f", fb, fsid)
	if code != ExitOK || !strings.Contains(out, "a.yaml: document 1 (deployment/rook-ceph-mgr-a") || !strings.Contains(out, "b.yaml: document 1 (deployment/rook-ceph-mgr-b") {
		t.Errorf("-f a -f b: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = run(t, "", "inject", "-f", fa, "-f", fb, fsid)
	if code != ExitOK || strings.Count(out, "kind: Deployment") != 2 || !strings.Contains(out, "\n---\n") {
		t.Errorf("inject -f a -f b: exit %d, want both mgrs as two documents:\n%s", code, out)
	}
	out, _, code = run(t, "", "validate", "-f", dir, fsid)
	if code != ExitOK || strings.Count(out, "admitted") != 2 || strings.Contains(out, "rook-ceph-mgr-c") {
		t.Errorf("-f DIR: exit %d, want a and b, not sub/c:\n%s", code, out)
	}
	out, _, code = run(t, "", "validate", "-R", "-f", dir, fsid)
	if code != ExitOK || strings.Count(out, "admitted") != 3 {
		t.Errorf("-R -f DIR: exit %d, want a, b and sub/c:\n%s", code, out)
	}
}

// TestStructuredOutput: -o json and -o yaml write the Results and
// CheckResult schema (apiVersion ResultsAPIVersion), the same facts as text.
func TestStructuredOutput(t *testing.T) {
	privileged := strings.Replace(minimal(t), "image: quay.io/ceph/ceph:v19.2.3", "image: quay.io/ceph/ceph:v19.2.3\n          securityContext: {privileged: true}", 1)
	for _, format := range []string{"json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			out, errOut, code := run(t, minimal(t)+"---\n"+strings.Replace(strings.Replace(privileged, "rook-ceph-mgr-a", "rook-ceph-mgr-b", 1), "mgr: a", "mgr: b", 1), "validate", "-f", "-", fsid, "-o", format)
			if code != ExitRefused {
				t.Fatalf("exit %d, want %d: %s", code, ExitRefused, errOut)
			}
			var r Results
			if err := yaml.UnmarshalStrict([]byte(out), &r); err != nil {
				t.Fatalf("not a Results document: %v\n%s", err, out)
			}
			if r.APIVersion != ResultsAPIVersion || r.Kind != "Results" || r.Command != "validate" || len(r.Items) != 2 {
				t.Fatalf("results %+v", r)
			}
			if a, b := r.Items[0], r.Items[1]; a.Verdict != VerdictAdmitted || a.Name != "rook-ceph-mgr-a" || b.Verdict != VerdictRefused || b.Document != 2 ||
				len(b.Denials) != 1 || b.Denials[0].Field != "spec.template.spec.containers[0].securityContext.privileged" || b.Denials[0].Type != "Forbidden" {
				t.Errorf("items %+v", r.Items)
			}
			if errOut != "" {
				t.Errorf("with -o the report goes only to stdout; stderr: %s", errOut)
			}
		})
	}
	out, _, code := run(t, minimal(t), "diff", "-f", "-", fsid, "-o", "json")
	var r Results
	if err := yaml.UnmarshalStrict([]byte(out), &r); err != nil || code != ExitRefused || len(r.Diffs) != 1 || !strings.Contains(r.Diffs[0].Diff, "+            - --fsid=dcef92d7") {
		t.Errorf("diff -o json: exit %d, %v\n%s", code, err, out)
	}
}

// TestPluginName: as kubectl-mgr the command names itself kubectl mgr.
func TestPluginName(t *testing.T) {
	if got := NameFor("/usr/local/bin/kubectl-mgr"); got != "kubectl mgr" {
		t.Errorf("NameFor(kubectl-mgr) = %q", got)
	}
	if got := NameFor("./bin/mgrctl"); got != "mgrctl" {
		t.Errorf("NameFor(mgrctl) = %q", got)
	}
	var out, errb bytes.Buffer
	if code := Execute(context.Background(), "kubectl mgr", []string{"--help"}, nil, &out, &errb); code != ExitOK || !strings.Contains(out.String(), "kubectl mgr [command]") {
		t.Errorf("kubectl mgr --help: exit %d\n%s", code, out.String())
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

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"bytes"
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/internal/harness/golden"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/internal/mgrctl"
	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/webhook"
)

// gitopsInputs are the golden corpus's inputs the suite's webhook policy
// completes (those with a policy file of their own are for another policy).
func gitopsInputs(t *testing.T) []string {
	t.Helper()
	cases, err := golden.Cases(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cases {
		if c.Policy == "" {
			out = append(out, c.Input)
		}
	}
	return out
}

// runMgrctl runs mgrctl against this API server with the webhook's policy.
func runMgrctl(t *testing.T, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	p := policy()
	p.APIVersion, p.Kind = mutate.PolicyAPIVersion, mutate.PolicyKind
	data, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := mgrctl.Run(context.Background(), append(args, "--kubeconfig", api.Kubeconfig, "--policy", file), bytes.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

// dryRun is what the API server would store for a create of doc.
func dryRun(t *testing.T, doc []byte) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(doc, d); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(context.Background(), d, client.DryRunAll); err != nil {
		t.Fatalf("dry-run create: %v", err)
	}
	return d
}

// TestGitOps: for every golden input, mgrctl inject (reading the Ceph
// cluster from the API server as the webhook does) writes what the webhook
// makes of it; after kubectl apply, client-side or server-side, of the input
// or of mgrctl's output, kubectl diff in the same mode is empty, and
// mgrctl diff of the live mgr shows nothing to change.
func TestGitOps(t *testing.T) {
	for _, in := range gitopsInputs(t) {
		t.Run(strings.TrimSuffix(filepath.Base(in), ".yaml"), func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			injected, stderr, code := runMgrctl(t, raw, "inject", "-f", "-")
			if code != 0 {
				t.Fatalf("mgrctl inject: exit %d: %s", code, stderr)
			}
			if diff, stderr, code := runMgrctl(t, []byte(injected), "diff", "-f", "-"); code != 0 || diff != "" {
				t.Errorf("mgrctl diff of its own output: exit %d, %q: %s", code, diff, stderr)
			}
			// The webhook completes the input, and finds nothing to change in
			// mgrctl's output: the two store the same object.
			patched := patchedCount(t)
			viaWebhook := dryRun(t, raw)
			if patchedCount(t) == patched {
				t.Fatal("the webhook did not patch the input: the count below proves nothing")
			}
			patched = patchedCount(t)
			viaMgrctl := dryRun(t, []byte(injected))
			if n := patchedCount(t); n != patched {
				t.Errorf("the webhook patched mgrctl's output (%v patches)", n-patched)
			}
			for _, d := range []*appsv1.Deployment{viaWebhook, viaMgrctl} {
				d.UID, d.CreationTimestamp, d.ManagedFields = "", viaWebhook.CreationTimestamp, nil
			}
			if !equality.Semantic.DeepEqual(viaWebhook.ObjectMeta, viaMgrctl.ObjectMeta) || !equality.Semantic.DeepEqual(viaWebhook.Spec, viaMgrctl.Spec) {
				w, _ := yaml.Marshal(viaWebhook)
				m, _ := yaml.Marshal(viaMgrctl)
				t.Fatalf("the webhook stores\n%s\nmgrctl's output stores\n%s", w, m)
			}
			d := dryRun(t, raw)
			for _, source := range []struct {
				name string
				doc  []byte
			}{{"input", raw}, {"mgrctl output", []byte(injected)}} {
				for _, mode := range [][]string{nil, {"--server-side"}} {
					deleteDeployment(t, d.Namespace, d.Name)
					if out, err := api.RunKubectl(t.Context(), source.doc, append([]string{"apply", "-f", "-"}, mode...)...); err != nil {
						t.Fatalf("kubectl apply %v of the %s: %v: %s", mode, source.name, err, out)
					}
					// kubectl diff: exit 0 with no output when nothing differs
					// (on stderr, the webhook's warnings of values it replaces).
					cmd := exec.Command(api.Kubectl, append([]string{"--kubeconfig", api.Kubeconfig, "diff", "-f", "-"}, mode...)...)
					cmd.Stdin = bytes.NewReader(source.doc)
					var stderr bytes.Buffer
					cmd.Stderr = &stderr
					if out, err := cmd.Output(); err != nil || len(out) != 0 {
						t.Errorf("kubectl diff %v after applying the %s: %v:\n%s%s", mode, source.name, err, out, &stderr)
					}
					if out, stderr, code := runMgrctl(t, nil, "diff", "deploy/"+d.Name, "-n", d.Namespace); code != 0 || out != "" {
						t.Errorf("mgrctl diff deploy/%s after applying the %s %v: exit %d:\n%s%s", d.Name, source.name, mode, code, out, stderr)
					}
				}
			}
			deleteDeployment(t, d.Namespace, d.Name)
		})
	}
}

// patchedCount is how many admissions the in-process webhook has answered
// with a patch so far.
func patchedCount(t *testing.T) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "mgr_webhook_admissions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["webhook"] == "mutate" && labels["outcome"] == webhook.OutcomePatched {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestMgrctlCheck: mgrctl check explains a live mgr from the API server's
// objects: selected, governed, admitted and complete; exempt by the policy;
// and, in kube-system, not selected by the namespaceSelector.
func TestMgrctlCheck(t *testing.T) {
	ctx := context.Background()
	create := func(ns, id string) {
		t.Helper()
		d := example(t)
		d.Namespace, d.Name, d.Labels["mgr"] = ns, "rook-ceph-mgr-"+id, id
		if ns != "rook-ceph" || id == "z" {
			// Nothing completes it there: a complete mgr, as written.
			res, errs := mutate.Complete(d, infoOf("rook-ceph"), policy())
			if len(errs) > 0 {
				t.Fatal(errs.ToAggregate())
			}
			d = res.Deployment
			d.Namespace = ns
		}
		deleteDeployment(t, ns, d.Name)
		if err := k8s.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteDeployment(t, ns, d.Name) })
	}
	create("rook-ceph", "a")
	create("rook-ceph", "z") // exempt by the suite's policy
	create("kube-system", "k")
	for name, tc := range map[string]struct {
		ns, deploy string
		code       int      // 1: something is not ok
		want       []string // lines, each a substring of one
	}{
		"governed": {"rook-ceph", "rook-ceph-mgr-a", 1, []string{
			"ok   webhook mutate.mgr.ceph.rook.io selects it (objectSelector",
			"ok   webhook mutate.mgr.ceph.rook.io selects it (namespaceSelector",
			"ok   governed by",
			"ok   the policy admits it",
			"ok   complete: completed by",
			"FAIL no bootstrap status yet: is mgr-bootstrap running",
			"ok   the API server calls the webhook: a dry-run create of this mgr passed admission",
		}},
		"exempt": {"rook-ceph", "rook-ceph-mgr-z", 0, []string{"ok   exempt by"}},
		"kube-system": {"kube-system", "rook-ceph-mgr-k", 1, []string{
			"FAIL webhook mutate.mgr.ceph.rook.io does not select it: its namespaceSelector",
		}},
	} {
		t.Run(name, func(t *testing.T) {
			out, stderr, code := runMgrctl(t, nil, "check", "deploy/"+tc.deploy, "-n", tc.ns)
			if code != tc.code {
				t.Errorf("exit %d, want %d:\n%s%s", code, tc.code, out, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("mgrctl check lacks %q:\n%s%s", w, out, stderr)
				}
			}
		})
	}
	// -o json: the same findings as a CheckResult, the exit code the same.
	t.Run("-o json", func(t *testing.T) {
		text, _, textCode := runMgrctl(t, nil, "check", "deploy/rook-ceph-mgr-a", "-n", "rook-ceph")
		out, stderr, code := runMgrctl(t, nil, "check", "deploy/rook-ceph-mgr-a", "-n", "rook-ceph", "-o", "json")
		var r mgrctl.CheckResult
		if err := yaml.UnmarshalStrict([]byte(out), &r); err != nil {
			t.Fatalf("not a CheckResult: %v\n%s%s", err, out, stderr)
		}
		if code != textCode || r.APIVersion != mgrctl.ResultsAPIVersion || r.Kind != "CheckResult" || r.Name != "rook-ceph-mgr-a" || r.Namespace != "rook-ceph" || r.OK != (code == mgrctl.ExitOK) {
			t.Errorf("exit %d (text: %d), %+v", code, textCode, r)
		}
		if lines := strings.Count(text, "\n") - 1; len(r.Findings) != lines {
			t.Errorf("%d findings, the text has %d:\n%s", len(r.Findings), lines, text)
		}
	})
	// The cluster cannot be reached, or refuses the caller: exit 3, for
	// every command that reads it.
	t.Run("unreachable", func(t *testing.T) {
		for name, args := range map[string][]string{
			"forbidden check": {"check", "deploy/rook-ceph-mgr-a", "-n", "rook-ceph", "--as", "nobody@example.com"},
			"forbidden diff":  {"diff", "deploy/rook-ceph-mgr-a", "-n", "rook-ceph", "--as", "nobody@example.com"},
			"no server there": {"check", "deploy/rook-ceph-mgr-a", "-n", "rook-ceph", "--server", "https://127.0.0.1:1"},
			"no such deploy":  {"diff", "deploy/not-there", "-n", "rook-ceph"},
		} {
			want := mgrctl.ExitUnreachable
			if name == "no such deploy" {
				want = mgrctl.ExitUsage
			}
			out, stderr, code := runMgrctl(t, nil, args...)
			if code != want {
				t.Errorf("%s: exit %d, want %d:\n%s%s", name, code, want, out, stderr)
			}
		}
	})
	// A caBundle that does not verify the webhook's certificate: the API
	// server's own handshake fails, and check says so in its words.
	t.Run("caBundle of another CA", func(t *testing.T) {
		other, _, err := testenv.NewCert(nil, nil, &x509.Certificate{Subject: pkix.Name{CommonName: "another CA"}, IsCA: true,
			BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign})
		if err != nil {
			t.Fatal(err)
		}
		setBundle := func(bundle []byte) (was []byte) {
			t.Helper()
			m := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: "mgr-webhook"}, m); err != nil {
				t.Fatal(err)
			}
			was = m.Webhooks[0].ClientConfig.CABundle
			for i := range m.Webhooks {
				m.Webhooks[i].ClientConfig.CABundle = bundle
			}
			if err := k8s.Update(ctx, m); err != nil {
				t.Fatal(err)
			}
			return was
		}
		good := setBundle(testenv.CertPEM(other))
		restored := false
		restore := func() {
			if !restored {
				setBundle(good)
				restored = true
			}
		}
		t.Cleanup(restore)
		const want = "FAIL the API server cannot call the webhook (a dry-run create of this mgr): "
		var out string
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			out, _, _ = runMgrctl(t, nil, "check", "deploy/rook-ceph-mgr-a", "-n", "rook-ceph")
			return strings.Contains(out, want), nil
		}); err != nil {
			t.Fatalf("mgrctl check never said %q:\n%s", want, out)
		}
		if !strings.Contains(out, "x509") {
			t.Errorf("the API server's reason is not quoted:\n%s", out)
		}
		restore()
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			out, _, _ = runMgrctl(t, nil, "check", "deploy/rook-ceph-mgr-a", "-n", "rook-ceph")
			return strings.Contains(out, "ok   the API server calls the webhook"), nil
		}); err != nil {
			t.Fatalf("with the caBundle restored, mgrctl check still says:\n%s", out)
		}
	})
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/webhook"
)

// TestHostileRequests sends the webhook, over TLS and straight to its port,
// what no API server would: each gets a 4xx or an answer with a reason (a
// denial, or an allow where a request must never be blocked), never a 5xx,
// and the server keeps serving. The growth of the process's peak RSS is
// logged for docs/reliability.md.
func TestHostileRequests(t *testing.T) {
	wo := api.Env.WebhookInstallOptions
	base := "https://" + net.JoinHostPort(wo.LocalServingHost, strconv.Itoa(wo.LocalServingPort))
	httpc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the served certificate is envtest's

	mgrJSON := func(edit func(map[string]any)) json.RawMessage {
		d := example(t)
		m := map[string]any{}
		b, _ := json.Marshal(d)
		_ = json.Unmarshal(b, &m)
		if edit != nil {
			edit(m)
		}
		out, _ := json.Marshal(m)
		return out
	}
	review := func(op admissionv1.Operation, kind, resource string, object, old json.RawMessage) []byte {
		r := map[string]any{
			"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
			"request": map[string]any{
				"uid": "hostile", "operation": op, "namespace": "rook-ceph", "name": "rook-ceph-mgr-a",
				"kind":     map[string]string{"group": "apps", "version": "v1", "kind": kind},
				"resource": map[string]string{"group": "apps", "version": "v1", "resource": resource},
				"userInfo": map[string]any{"username": "hostile"},
			},
		}
		req := r["request"].(map[string]any)
		if object != nil {
			req["object"] = object
		}
		if old != nil {
			req["oldObject"] = old
		}
		b, _ := json.Marshal(r)
		return b
	}
	deep := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
	manyContainers := mgrJSON(func(m map[string]any) {
		cs := make([]any, 10000)
		for i := range cs {
			cs[i] = map[string]any{"name": fmt.Sprintf("c%d", i), "image": "quay.io/ceph/ceph:v16.2.15"}
		}
		m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"] = cs
	})
	wrongSpec := mgrJSON(func(m map[string]any) { m["spec"] = "not an object" })
	pod, _ := json.Marshal(&corev1.Pod{})

	type want int
	const (
		rejected want = iota // 4xx, or an answer that denies with a message
		allowed              // an answer that allows (never block cleanup)
	)
	cases := map[string]struct {
		body  []byte
		paths []string
		want  want
	}{
		"garbage":                     {[]byte("\x00\xffnot json at all"), nil, rejected},
		"empty body":                  {nil, nil, rejected},
		"no request":                  {[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), nil, rejected},
		"20,000-deep JSON":            {[]byte(deep), nil, rejected},
		"20,000-deep object":          {review(admissionv1.Create, "Deployment", "deployments", json.RawMessage(deep), nil), nil, rejected},
		"body over the size cap":      {append([]byte(`{"request":{"object":"`), bytes.Repeat([]byte("x"), 8<<20)...), nil, rejected},
		"CREATE without an object":    {review(admissionv1.Create, "Deployment", "deployments", nil, nil), nil, rejected},
		"a Pod for a Deployment":      {review(admissionv1.Create, "Pod", "pods", pod, nil), nil, rejected},
		"UPDATE without oldObject":    {review(admissionv1.Update, "Deployment", "deployments", mgrJSON(nil), nil), nil, rejected},
		"spec of the wrong JSON type": {review(admissionv1.Create, "Deployment", "deployments", wrongSpec, nil), nil, rejected},
		"10,000 containers":           {review(admissionv1.Create, "Deployment", "deployments", manyContainers, nil), nil, rejected},
		"DELETE":                      {review(admissionv1.Delete, "Deployment", "deployments", nil, mgrJSON(nil)), nil, allowed},
		"CONNECT":                     {review(admissionv1.Connect, "Deployment", "deployments", nil, nil), nil, allowed},
	}
	paths := []string{webhook.MutatePath, webhook.ValidatePath, webhook.ValidateScalePath}
	before, _ := testenv.MemoryKiB(os.Getpid(), "VmHWM")
	for name, c := range cases {
		for _, path := range paths {
			t.Run(name+" "+path, func(t *testing.T) {
				resp, err := httpc.Post(base+path, "application/json", bytes.NewReader(c.body))
				if err != nil {
					t.Fatalf("no answer: %v", err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				if resp.StatusCode >= 500 {
					t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
				}
				if resp.StatusCode >= 400 {
					if c.want == allowed {
						t.Errorf("HTTP %d for a request that must pass: %s", resp.StatusCode, body)
					}
					return
				}
				var out admissionv1.AdmissionReview
				if err := json.Unmarshal(body, &out); err != nil || out.Response == nil {
					t.Fatalf("HTTP %d without an AdmissionReview answer: %s", resp.StatusCode, body)
				}
				r := out.Response
				switch {
				case c.want == allowed && !r.Allowed:
					t.Errorf("denied: %+v", r.Result)
				case c.want == rejected && r.Allowed && path != webhook.ValidateScalePath:
					t.Errorf("allowed: %s", body)
				case !r.Allowed && (r.Result == nil || r.Result.Message == ""):
					t.Errorf("a denial without a reason: %s", body)
				case !r.Allowed && r.Result.Code >= 500:
					t.Errorf("a denial with code %d: %s", r.Result.Code, r.Result.Message)
				}
			})
		}
	}
	after, _ := testenv.MemoryKiB(os.Getpid(), "VmHWM")
	t.Logf("peak RSS of the test process (API-server client, webhook server): %d KiB before, %d KiB after %d hostile requests (+%d KiB)",
		before, after, len(cases)*len(paths), after-before)
	// Still serving: the real example goes through the API server complete.
	d := example(t)
	d.Namespace = "ceph-east"
	if err := k8s.Create(t.Context(), d); err != nil {
		t.Fatalf("after the hostile requests: %v", err)
	}
	deleteDeployment(t, d.Namespace, d.Name)
}

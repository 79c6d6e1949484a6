// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/mutate"
)

// reviewBody is an AdmissionReview as the API server sends it.
func reviewBody(b *testing.B, op admissionv1.Operation, raw []byte) []byte {
	return updateReviewBody(b, op, raw, nil)
}

func updateReviewBody(b *testing.B, op admissionv1.Operation, raw, old []byte) []byte {
	req := request(op, raw, old)
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: &req.AdmissionRequest,
	})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// benchmarkHTTP runs whole admissions through the framework's HTTP handler:
// decode the review, decode the Deployment, handle, build and encode the patch.
func benchmarkHTTP(b *testing.B, h http.Handler, body []byte) {
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

func BenchmarkAdmission(b *testing.B) {
	minimal := must(yaml.YAMLToJSON(must(os.ReadFile("../manifests/examples/minimal-mgr.yaml"))))
	res, _ := mutate.Complete(decode(b, minimal), clusters["rook-ceph"], mutate.DefaultPolicy())
	complete := must(json.Marshal(res.Deployment))

	noop := &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Allowed("")
	})}
	p := mutate.DefaultPolicy()
	for name, tc := range map[string]struct {
		hook *admission.Webhook
		raw  []byte
	}{
		"noop-floor/minimal":  {noop, minimal},
		"mutate/minimal":      {newMutator(b, p), minimal},
		"mutate/complete":     {newMutator(b, p), complete},
		"validate/complete":   {newValidator(b, p), complete},
		"noop-floor/complete": {noop, complete},
	} {
		b.Run(name, func(b *testing.B) { benchmarkHTTP(b, tc.hook, reviewBody(b, admissionv1.Create, tc.raw)) })
	}
}

// BenchmarkValidateUpdate measures what ratcheting costs on UPDATE: a label
// change of a complete mgr (decode both objects, compare intent, validate
// once) and the same under a policy the old object violates (validate both
// and drop the old violations), beside a CREATE of the same object.
func BenchmarkValidateUpdate(b *testing.B) {
	minimal := must(yaml.YAMLToJSON(must(os.ReadFile("../manifests/examples/minimal-mgr.yaml"))))
	res, _ := mutate.Complete(decode(b, minimal), clusters["rook-ceph"], mutate.DefaultPolicy())
	old := must(json.Marshal(res.Deployment))
	labelled := res.Deployment.DeepCopy()
	labelled.Labels["team"] = "storage"
	raw := must(json.Marshal(labelled))
	tight := mutate.DefaultPolicy()
	tight.Images.MinimumCephVersion = "20.0.0"
	for name, tc := range map[string]struct {
		p    *mutate.Policy
		body []byte
	}{
		"create/complete":        {mutate.DefaultPolicy(), reviewBody(b, admissionv1.Create, old)},
		"update/label":           {mutate.DefaultPolicy(), updateReviewBody(b, admissionv1.Update, raw, old)},
		"update/label-ratcheted": {tight, updateReviewBody(b, admissionv1.Update, raw, old)},
		"noop-floor/update":      {nil, updateReviewBody(b, admissionv1.Update, raw, old)},
	} {
		b.Run(name, func(b *testing.B) {
			hook := &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
				return admission.Allowed("")
			})}
			if tc.p != nil {
				hook = newValidator(b, tc.p)
			}
			benchmarkHTTP(b, hook, tc.body)
		})
	}
}

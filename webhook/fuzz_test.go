// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kjson "sigs.k8s.io/json"

	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/policy"
)

// FuzzDecodeDeployment: whatever the API machinery's case-sensitive decoder
// makes of a body, the webhook's decoder makes the same.
func FuzzDecodeDeployment(f *testing.F) {
	for _, fx := range fixtures(f) {
		f.Add(fx.raw)
	}
	f.Add([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","Spec":{"replicas":3}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		want := &appsv1.Deployment{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, want); err != nil || want.APIVersion != "apps/v1" || want.Kind != "Deployment" {
			return // the API server would not send it
		}
		got, _, ok := decodeDeployment(request(admissionv1.Create, raw, nil), raw, "fuzz")
		if !ok {
			t.Fatalf("the webhook refused what the API machinery decodes: %q", raw)
		}
		if !equality.Semantic.DeepEqual(got, want) {
			t.Fatalf("decoders disagree on %q", raw)
		}
	})
}

// FuzzHandlers: any body, as object and old object of any operation, gets an
// answer from all three handlers: never a panic, a denial always with a
// reason and never a 5xx code.
func FuzzHandlers(f *testing.F) {
	for _, fx := range fixtures(f) {
		f.Add(fx.raw, fx.raw, uint8(1))
	}
	f.Add([]byte(`{`), []byte(nil), uint8(0))
	f.Add([]byte(`{}`), []byte(`{}`), uint8(1))
	f.Add([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"app":"rook-ceph-mgr","mgr":"a"}},"spec":{"template":{"spec":{"containers":[{"name":"mgr","args":["--id"]}]}}}}`), []byte(nil), uint8(0))
	mutator := &Mutator{Clusters: clusters, Live: live, Policy: policy.Static(mutate.DefaultPolicy())}
	validator := &Validator{Clusters: clusters, Live: live, Policy: policy.Static(mutate.DefaultPolicy())}
	scale := &ScaleValidator{Mgrs: staticMgrs{}, Live: live, Policy: policy.Static(mutate.DefaultPolicy())}
	ops := []admissionv1.Operation{admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect}
	f.Fuzz(func(t *testing.T, obj, old []byte, op uint8) {
		req := request(ops[int(op)%len(ops)], obj, old)
		for name, resp := range map[string]admission.Response{
			"mutate":   mutator.Handle(context.Background(), req),
			"validate": validator.Handle(context.Background(), req),
			"scale":    scale.Handle(context.Background(), req),
		} {
			if !resp.Allowed && (resp.Result == nil || resp.Result.Message == "" || resp.Result.Code >= 500) {
				t.Fatalf("%s: a denial without a reason or with a 5xx: %+v", name, resp.Result)
			}
		}
	})
}

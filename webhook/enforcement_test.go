// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/rook-mgr/mgr-webhook/mutate"
)

// TestEnforcementActions: a violated rule's action decides the answer, the
// same from the mutating handler (which judges what it completes: the one
// round trip) and the validating one: Deny refuses (and counts the rule),
// Warn admits with a warning naming the rule and no audit annotation, Audit
// admits with the audit annotation only; an error of no rule (two replicas)
// refuses whatever the policy sets, and is not counted as a rule.
func TestEnforcementActions(t *testing.T) {
	for _, f := range fixtures(t) {
		if f.name != "seed" {
			continue
		}
		in := decode(t, f.raw)
		res, errs := mutate.Complete(in, clusters[in.Namespace], f.policy)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		old := res.Deployment // Pacific 16.2.x
		for _, action := range []mutate.Action{mutate.ActionDeny, mutate.ActionWarn, mutate.ActionAudit} {
			for _, handler := range []string{"mutate", "validate"} {
				t.Run(string(action)+"/"+handler, func(t *testing.T) {
					p := mutate.DefaultPolicy()
					p.Images.MinimumCephVersion = "18.0.0"
					p.Enforcement = map[mutate.Rule]mutate.Action{mutate.RuleMinimumCephVersion: action}
					raw, _ := json.Marshal(old)
					counted := violations.WithLabelValues(string(mutate.RuleMinimumCephVersion), string(action))
					before := testutil.ToFloat64(counted)
					h := map[string]*admission.Webhook{"mutate": newMutator(t, p), "validate": newValidator(t, p)}[handler]
					resp := h.Handle(t.Context(), request(admissionv1.Create, raw, nil))
					if got := testutil.ToFloat64(counted) - before; got != 1 {
						t.Errorf("counted %v violations of the rule, want 1", got)
					}
					audit, audited := resp.AuditAnnotations[AuditAnnotationViolations]
					switch action {
					case mutate.ActionDeny:
						if resp.Allowed || len(resp.Warnings) != 0 || audited {
							t.Fatalf("Deny: allowed %v, warnings %q, audit %q", resp.Allowed, resp.Warnings, audit)
						}
					case mutate.ActionWarn:
						if !resp.Allowed || len(resp.Warnings) != 1 || !strings.HasSuffix(resp.Warnings[0], "(policy rule images.minimumCephVersion: Warn)") || audited {
							t.Fatalf("Warn: allowed %v, warnings %q, audit %q", resp.Allowed, resp.Warnings, audit)
						}
					case mutate.ActionAudit:
						if !resp.Allowed || len(resp.Warnings) != 0 || !strings.HasSuffix(audit, "(policy rule images.minimumCephVersion: Audit)") {
							t.Fatalf("Audit: allowed %v, warnings %q, audit %q", resp.Allowed, resp.Warnings, audit)
						}
					}

					// Two replicas: no rule of the policy's, refused whatever it says.
					two := old.DeepCopy()
					two.Spec.Replicas = new(int32)
					*two.Spec.Replicas = 2
					two.Spec.Template.Spec.Containers[0].Image = "quay.io/ceph/ceph:v18.2.4"
					for i := range two.Spec.Template.Spec.InitContainers {
						two.Spec.Template.Spec.InitContainers[i].Image = "quay.io/ceph/ceph:v18.2.4"
					}
					raw, _ = json.Marshal(two)
					if resp := h.Handle(t.Context(), request(admissionv1.Create, raw, nil)); resp.Allowed {
						t.Fatal("two replicas admitted")
					}
					if got := testutil.ToFloat64(violations.WithLabelValues("", string(mutate.ActionDeny))); got != 0 {
						t.Errorf("an error of no rule counted as a rule's violation %v times", got)
					}
				})
			}
		}
		return
	}
	t.Fatal("no seed fixture")
}

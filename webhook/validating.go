// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"context"
	"errors"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

// Validator enforces the policy on the final mgr Deployment: the backstop
// behind the mutator, which sees the object after every mutating webhook.
type Validator struct {
	Clusters ClusterLookup
	Live     LiveLookup
	Policy   PolicySource
}

var _ admission.Handler = &Validator{}

const validateName = "validate"

// Handle validates CREATE and UPDATE of mgr Deployments the policy governs
// (neither exempted by the policy's owner nor owned by a live CephCluster).
// It never blocks cleanup: an object being deleted, and an update that
// changes no spec, label or user annotation (status, finalizer, owner and
// controller writes), is admitted without a look at policy or cluster, and
// other updates are judged only on the violations they introduce
// (mutate.ValidateUpdate). A governed mgr cannot leave the policy by its
// editor's hand: dropping label app is refused, and the opt-out label or a
// CephCluster owner reference exempts nothing by itself. The webhook
// configuration's matchConditions spare the API server the call for the
// cleanup cases; this is the same rule for configurations without them.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if resp, bad := malformed(req, validateName); bad {
		return resp
	}
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		count(validateName, OutcomeSkipped)
		return admission.Allowed("")
	}
	d, resp, ok := decodeDeployment(req, req.Object.Raw, validateName)
	if !ok {
		return resp
	}
	if d.DeletionTimestamp != nil {
		count(validateName, OutcomeSkipped)
		return admission.Allowed("being deleted")
	}
	ns := namespaceOf(req, d)
	policy := v.Policy.InForce().Policy // one policy for the whole request
	live := &onceLive{LiveLookup: v.Live}
	var old *appsv1.Deployment
	if req.Operation == admissionv1.Update {
		if old, resp, ok = decodeDeployment(req, req.OldObject.Raw, validateName); !ok {
			return resp
		}
		// Cleanup first, before any lookup that could fail: a status,
		// finalizer or owner write carries no intent to judge.
		if contract.IntentUnchanged(old, d) {
			count(validateName, OutcomeSkipped)
			return admission.Allowed("no change of spec, labels or annotations")
		}
		oldGoverned, err := governs(ctx, live, policy, ns, old, contract.IsMgr(old))
		if err != nil {
			return denyOwner(ctx, validateName, d, err)
		}
		if !oldGoverned {
			old = nil // entering the policy: judged as a new mgr
		} else if errs := mutate.ValidateStaysMgr(old, d); len(errs) > 0 {
			return deny(ctx, validateName, d, errs)
		}
	}
	gov, err := governs(ctx, live, policy, ns, d, contract.IsMgr(d))
	if err != nil {
		return denyOwner(ctx, validateName, d, err)
	}
	if old != nil && !gov && contract.IsMgr(d) && !policy.Exempts(ns, d.Name) {
		// A governed mgr stays governed: an owner reference its writer adds,
		// even to a live CephCluster, hands it to no one.
		gov = true
	}
	if !gov {
		count(validateName, OutcomeSkipped)
		return admission.Allowed("not a mgr Deployment the policy governs")
	}
	info, err := v.Clusters.Lookup(ns)
	if err != nil {
		var missing *MissingClusterObjectsError
		if old != nil && errors.As(err, &missing) && contract.SpecUnchanged(old, d) {
			// A cluster being torn down: labels and annotations stay writable.
			count(validateName, OutcomeAllowed)
			return admission.Allowed("").WithWarnings(err.Error())
		}
		return denyCluster(ctx, validateName, d, err)
	}
	var errs field.ErrorList
	if old != nil {
		errs = mutate.ValidateUpdate(old, d, info, policy)
	} else {
		errs = mutate.Validate(d, info, policy)
	}
	return judged(ctx, validateName, d, policy, errs)
}

// judged answers by the policy's action for each violated rule: any Deny
// refuses the write; Warn admits it with a warning; Audit admits it with an
// audit annotation only (the API server's audit log keeps it).
func judged(ctx context.Context, webhook string, d *appsv1.Deployment, p *mutate.Policy, errs field.ErrorList) admission.Response {
	v := p.Judge(errs)
	var warnings []string
	for _, e := range v.Warn {
		violations.WithLabelValues(e.Origin, string(mutate.ActionWarn)).Inc()
		warnings = append(warnings, p.Describe(e))
	}
	var audits []string
	for _, e := range v.Audit {
		violations.WithLabelValues(e.Origin, string(mutate.ActionAudit)).Inc()
		audits = append(audits, p.Describe(e))
	}
	for _, e := range v.Deny {
		if e.Origin != "" {
			violations.WithLabelValues(e.Origin, string(mutate.ActionDeny)).Inc()
		}
	}
	if len(v.Deny) > 0 {
		return deny(ctx, webhook, d, v.Deny).WithWarnings(warnings...)
	}
	count(webhook, OutcomeAllowed)
	resp := admission.Allowed("").WithWarnings(warnings...)
	if len(audits) > 0 {
		// The API server prefixes the key with the webhook's name.
		resp.AuditAnnotations = map[string]string{AuditAnnotationViolations: strings.Join(audits, "; ")}
	}
	return resp
}

// AuditAnnotationViolations is the audit annotation (after the webhook's
// name and "/") that lists the violations of rules whose action is Audit.
const AuditAnnotationViolations = "policy-violations"

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
	"github.com/rook-mgr/mgr-webhook/policy"
)

// governedWrite is a CREATE or UPDATE of a mgr Deployment the policy
// governs, with what it is judged by.
type governedWrite struct {
	d *appsv1.Deployment
	// old is nil for a create, and for an update that brings the
	// Deployment under the policy (judged as a new mgr).
	old  *appsv1.Deployment
	in   policy.InForce // one policy for the whole request
	info mutate.ClusterInfo
}

// admit decides whether req is a governed mgr write to complete and judge.
// When it is not, or cannot be judged, resp is the answer. It never blocks
// cleanup: an object being deleted, and an update that changes no spec,
// label or user annotation (status, finalizer, owner and controller
// writes), is admitted before any lookup that could fail. A governed mgr
// cannot leave the policy by its editor's hand: dropping label app is
// refused, and the opt-out label or a CephCluster owner reference exempts
// nothing by itself: only Rook's operator may write a mgr Deployment with
// a CephCluster owner, and only a live CephCluster's is Rook's. The webhook
// configuration's matchConditions spare the API server the call for the
// cleanup cases; this is the same rule for configurations without them.
func admit(ctx context.Context, req admission.Request, webhook string, src PolicySource, clusters ClusterLookup, lookup LiveLookup) (w *governedWrite, resp admission.Response, governed bool) {
	if resp, bad := malformed(req, webhook); bad {
		return nil, resp, false
	}
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		count(webhook, OutcomeSkipped)
		return nil, admission.Allowed(""), false
	}
	d, resp, ok := decodeDeployment(req, req.Object.Raw, webhook)
	if !ok {
		return nil, resp, false
	}
	if d.DeletionTimestamp != nil {
		count(webhook, OutcomeSkipped)
		return nil, admission.Allowed("being deleted"), false
	}
	ns := namespaceOf(req, d)
	w = &governedWrite{d: d, in: src.InForce()}
	p := w.in.Policy
	exempt := p.Exempts(ns, d.Name) // names are immutable: old and new alike
	live := &onceLive{LiveLookup: lookup}
	var prev *appsv1.Deployment // the object before an update, governed or not
	if req.Operation == admissionv1.Update {
		if w.old, resp, ok = decodeDeployment(req, req.OldObject.Raw, webhook); !ok {
			return nil, resp, false
		}
		prev = w.old
		if contract.IntentUnchanged(w.old, d) {
			count(webhook, OutcomeSkipped)
			return nil, admission.Allowed("no change of spec, labels or annotations"), false
		}
		oldGoverned, err := governsLive(ctx, live, ns, w.old, contract.IsMgr(w.old) && !exempt)
		if err != nil {
			return nil, denyOwner(ctx, webhook, d, err), false
		}
		if !oldGoverned {
			w.old = nil
		} else if errs := mutate.ValidateStaysMgr(w.old, d); len(errs) > 0 {
			return nil, deny(ctx, webhook, d, errs), false
		}
	}
	if contract.HidesMgr(d) && !exempt {
		// Pods of a mgr that no selector of ours would see: refused, not
		// skipped, whoever its claimed owner is (Rook labels its own).
		if errs := mutate.ValidateNotHidden(prev, d); len(errs) > 0 {
			return nil, deny(ctx, webhook, d, errs), false
		}
	}
	if !exempt {
		// A CephCluster owner leaves a mgr to Rook: only Rook writes its pods.
		if errs := mutate.ValidateRookWriter(prev, d, p, req.UserInfo.Username, req.UserInfo.Groups); len(errs) > 0 {
			return nil, deny(ctx, webhook, d, errs), false
		}
	}
	gov, err := governsLive(ctx, live, ns, d, contract.IsMgr(d) && !exempt)
	if err != nil {
		return nil, denyOwner(ctx, webhook, d, err), false
	}
	if w.old != nil && !gov && contract.IsMgr(d) && !exempt {
		// A governed mgr stays governed: an owner reference its writer adds,
		// even to a live CephCluster, hands it to no one.
		gov = true
	}
	if !gov {
		count(webhook, OutcomeSkipped)
		return nil, admission.Allowed("not a mgr Deployment the policy governs"), false
	}
	if w.info, err = clusters.Lookup(ns); err != nil {
		var missing *MissingClusterObjectsError
		if w.old != nil && errors.As(err, &missing) && contract.SpecUnchanged(w.old, d) {
			// A cluster being torn down: labels and annotations stay writable.
			count(webhook, OutcomeAllowed)
			return nil, admission.Allowed("").WithWarnings(err.Error()), false
		}
		return nil, denyCluster(ctx, webhook, d, err), false
	}
	return w, admission.Response{}, true
}

// violations are the policy's errors on the write's object: an update is
// judged by what it changes (mutate.ValidateUpdate), and a change of the
// mgr's Ceph release by the release guard (mutate.ValidateRelease).
func (w *governedWrite) violations() field.ErrorList {
	var errs field.ErrorList
	if w.old != nil {
		errs = mutate.ValidateUpdate(w.old, w.d, w.info, w.in.Policy)
	} else {
		errs = mutate.Validate(w.d, w.info, w.in.Policy)
	}
	return append(errs, mutate.ValidateRelease(w.old, w.d, w.info, w.in.Policy)...)
}

// judgement is the policy's answer to a write's violations, by each
// violated rule's action: any Deny refuses the write; Warn admits it with a
// warning; Audit admits it with an audit annotation only (the API server's
// audit log keeps it).
type judgement struct {
	deny             field.ErrorList
	warnings, audits []string
}

// judge sorts errs by the policy's actions and counts them.
func judge(p *mutate.Policy, errs field.ErrorList) judgement {
	v := p.Judge(errs)
	j := judgement{deny: v.Deny}
	for _, e := range v.Warn {
		violations.WithLabelValues(e.Origin, string(mutate.ActionWarn)).Inc()
		j.warnings = append(j.warnings, p.Describe(e))
	}
	for _, e := range v.Audit {
		violations.WithLabelValues(e.Origin, string(mutate.ActionAudit)).Inc()
		j.audits = append(j.audits, p.Describe(e))
	}
	for _, e := range v.Deny {
		if e.Origin != "" {
			violations.WithLabelValues(e.Origin, string(mutate.ActionDeny)).Inc()
		}
	}
	return j
}

// refused is the denial of a judgement with Deny violations, with its
// warnings (and those of the caller) attached.
func (j judgement) refused(ctx context.Context, webhook string, d *appsv1.Deployment, warnings ...string) admission.Response {
	return deny(ctx, webhook, d, j.deny).WithWarnings(append(warnings, j.warnings...)...)
}

// admitted adds the judgement's warnings and audit annotation to resp.
func (j judgement) admitted(resp admission.Response) admission.Response {
	resp = resp.WithWarnings(j.warnings...)
	if len(j.audits) > 0 {
		// The API server prefixes the key with the webhook's name.
		resp.AuditAnnotations = map[string]string{AuditAnnotationViolations: strings.Join(j.audits, "; ")}
	}
	return resp
}

// AuditAnnotationViolations is the audit annotation (after the webhook's
// name and "/") that lists the violations of rules whose action is Audit.
const AuditAnnotationViolations = "policy-violations"

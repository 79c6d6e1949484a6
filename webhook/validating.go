// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Validator enforces the policy on the final mgr Deployment, after every
// mutating webhook, in Go: the shipped configuration no longer routes mgr
// writes here (the Mutator judges what it completes, and the shipped
// ValidatingAdmissionPolicy mgr-policy checks the final object for the rules
// CEL can express). It serves ValidatePath for configurations that still
// call it: those of earlier releases during an upgrade, and a site's own
// that wants every rule judged in Go after other mutating webhooks.
type Validator struct {
	Clusters ClusterLookup
	Live     LiveLookup
	Policy   PolicySource
}

var _ admission.Handler = &Validator{}

const validateName = "validate"

// Handle validates CREATE and UPDATE of mgr Deployments the policy governs
// (see admit).
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	w, resp, ok := admit(ctx, req, validateName, v.Policy, v.Clusters, v.Live)
	if !ok {
		return resp
	}
	j := judge(w.in.Policy, w.violations())
	if len(j.deny) > 0 {
		return j.refused(ctx, validateName, w.d)
	}
	count(validateName, OutcomeAllowed)
	return j.admitted(admission.Allowed(""))
}

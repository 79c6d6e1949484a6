// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"errors"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// malformed answers 400 to what no API server sends: a review without a
// request (no uid or operation), and an UPDATE without the old object. The
// framework decodes a body without "request" into an empty request, which
// every rule below would otherwise let through.
func malformed(req admission.Request, webhook string) (admission.Response, bool) {
	var err error
	switch {
	case req.UID == "" || req.Operation == "":
		err = errors.New("the AdmissionReview has no request (uid and operation are required)")
	case req.Operation == admissionv1.Update && len(req.OldObject.Raw) == 0:
		err = errors.New("an UPDATE review carries the old object; this one has none")
	default:
		return admission.Response{}, false
	}
	count(webhook, OutcomeErrored, DenialBadRequest)
	return admission.Errored(http.StatusBadRequest, err), true
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// ScaleValidator holds a mgr Deployment to one replica through the scale
// subresource (kubectl scale, HorizontalPodAutoscaler), which bypasses the
// Deployment webhooks. A Scale carries no labels, so the webhook
// configuration matches it by name (rook-ceph-mgr-*, the only name a mgr may
// have) and replicas > 1 with matchConditions, and the handler tells a mgr
// from a namesake by the mgr Deployments it caches.
type ScaleValidator struct {
	Mgrs   MgrLookup
	Live   LiveLookup
	Policy PolicySource
}

var _ admission.Handler = &ScaleValidator{}

const scaleName = "scale"

var scaleGK = schema.GroupKind{Group: autoscalingv1.GroupName, Kind: "Scale"}

// Handle refuses a scale of a managed mgr Deployment past one replica.
func (s *ScaleValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if resp, bad := malformed(req, scaleName); bad {
		return resp
	}
	if req.Operation != admissionv1.Update {
		count(scaleName, OutcomeSkipped)
		return admission.Allowed("")
	}
	if req.Kind.Group != autoscalingv1.GroupName || req.Kind.Kind != "Scale" {
		count(scaleName, OutcomeErrored, DenialBadRequest)
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("this webhook admits autoscaling Scale objects of deployments/scale only, got %s; fix the webhook configuration's rules", req.Kind))
	}
	sc := &autoscalingv1.Scale{}
	if err := decodeObject(req.Object.Raw, sc); err != nil {
		count(scaleName, OutcomeErrored, DenialBadRequest)
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("cannot decode the Scale: %w", err))
	}
	if sc.Spec.Replicas <= 1 {
		count(scaleName, OutcomeAllowed)
		return admission.Allowed("")
	}
	ns := req.Namespace
	if ns == "" {
		ns = sc.Namespace
	}
	name := req.Name
	if name == "" {
		name = sc.Name
	}
	meta, ok := s.Mgrs.MgrDeployment(ns, name)
	if !ok {
		// Not cached yet (just created, or the watch is reconnecting): a
		// miss must not wave a mgr through, so ask the API server.
		live, err := s.Live.Deployment(ctx, ns, name)
		if err != nil {
			count(scaleName, OutcomeErrored, DenialBadRequest)
			return admission.Errored(http.StatusInternalServerError, fmt.Errorf("cannot read Deployment %s/%s to check its scale: %w; retry", ns, name, err))
		}
		meta, ok = live, live != nil
	}
	isMgr := ok && meta.GetLabels()[contract.LabelApp] == contract.AppName
	var gov bool
	if isMgr {
		var err error
		if gov, err = governsLive(ctx, s.Live, ns, meta, !s.Policy.InForce().Policy.Exempts(ns, meta.GetName())); err != nil {
			count(scaleName, OutcomeDenied, DenialOwnerUnverified)
			return admission.Errored(http.StatusInternalServerError, err)
		}
	}
	if !gov {
		count(scaleName, OutcomeSkipped)
		return admission.Allowed("not a mgr Deployment the policy governs")
	}
	errs := field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), sc.Spec.Replicas, fmt.Sprintf(
		"mgr Deployment %s runs at most 1 pod (mgr %q must not run twice); scale it to 0 or 1, and add a standby as another mgr Deployment with its own mgr id",
		name, meta.GetLabels()[contract.LabelMgrID]))}
	return respondDenied(ctx, scaleName, scaleGK, name, errs, reasonsOf(errs))
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kjson "sigs.k8s.io/json"

	"github.com/rook-mgr/mgr-webhook/mutate"
)

var deploymentGK = schema.GroupKind{Group: appsv1.GroupName, Kind: "Deployment"}

// Mutator completes mgr Deployments on CREATE and UPDATE.
type Mutator struct {
	Clusters ClusterLookup
	Live     LiveLookup
	Policy   PolicySource
	// Version is the project's, stamped with the policy's hash on every mgr
	// it completes (mgr.ceph.rook.io/completed-by).
	Version string
}

var _ admission.Handler = &Mutator{}

const mutateName = "mutate"

// Handle completes the Deployment and judges the completed object by the
// policy, in this one call: a violation of a Deny rule refuses the write;
// otherwise the answer is a patch of the sections that changed (none when
// it was complete already), with the warnings and audit annotation of the
// Warn and Audit rules. Which writes are judged at all is admit's.
func (m *Mutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	w, resp, ok := admit(ctx, req, mutateName, m.Policy, m.Clusters, m.Live)
	if !ok {
		return resp
	}
	res, errs := mutate.CompleteInPlace(w.d, w.info, w.in.Policy) // w.d is ours: no copy
	if len(errs) > 0 {
		return deny(ctx, mutateName, w.d, errs)
	}
	if mutate.StampInPlace(res.Deployment, mutate.Stamp{Version: m.Version, Policy: w.in.Hash}) {
		res.Changed |= mutate.SectionAnnotations
	}
	w.d = res.Deployment
	res.Changed |= mutate.KeepKeyGeneration(w.old, w.d)
	res.Changed |= mutate.HoldRollout(w.old, w.d, w.info.Upgrade)
	j := judge(w.in.Policy, w.violations())
	if len(j.deny) > 0 {
		return j.refused(ctx, mutateName, w.d, res.Warnings...)
	}
	if res.Changed == 0 {
		count(mutateName, OutcomeAllowed)
		return j.admitted(admission.Allowed("").WithWarnings(res.Warnings...))
	}
	patch, err := patchFor(res)
	if err != nil {
		// Typed Deployments always encode; should it ever fail, refuse with
		// the reason rather than answer 500.
		count(mutateName, OutcomeErrored)
		return admission.Denied(fmt.Sprintf("cannot encode the completion patch (%v); please report this as a bug", err))
	}
	count(mutateName, OutcomePatched)
	if v := logf.FromContext(ctx).V(1); v.Enabled() {
		v.Info("completed mgr Deployment", "sections", fmt.Sprintf("%b", res.Changed))
	}
	return j.admitted(patched(patch).WithWarnings(res.Warnings...))
}

// decodeDeployment decodes the request object; a request that is not an
// apps/v1 Deployment is a 400 naming what was expected. It decodes with the
// API machinery's own case-sensitive JSON decoder directly: the generic
// runtime decoder parses the whole document once more just to read its kind,
// which the request already states.
func decodeDeployment(req admission.Request, raw []byte, webhook string) (*appsv1.Deployment, admission.Response, bool) {
	if req.Kind.Group != appsv1.GroupName || req.Kind.Version != "v1" || req.Kind.Kind != "Deployment" {
		count(webhook, OutcomeErrored, DenialBadRequest)
		return nil, admission.Errored(http.StatusBadRequest, fmt.Errorf("this webhook admits apps/v1 Deployments only, got %s; fix the webhook configuration's rules", req.Kind)), false
	}
	d := &appsv1.Deployment{}
	err := decodeObject(raw, d)
	if err == nil && (d.APIVersion != "apps/v1" || d.Kind != "Deployment") {
		err = fmt.Errorf("the object is %s %s, not an apps/v1 Deployment", d.APIVersion, d.Kind)
	}
	if err != nil {
		count(webhook, OutcomeErrored, DenialBadRequest)
		return nil, admission.Errored(http.StatusBadRequest, fmt.Errorf("cannot decode the Deployment: %w", err)), false
	}
	return d, admission.Response{}, true
}

// decodeObject reads an object of a review with the API machinery's decoder:
// case-sensitive, as the API server decodes what it stores (goccy/go-json,
// tried for speed, matched field names case-insensitively).
func decodeObject(raw []byte, obj any) error {
	if len(raw) == 0 {
		return errors.New("there is no content to decode")
	}
	return kjson.UnmarshalCaseSensitivePreserveInts(raw, obj)
}

// namespaceOf prefers the request's namespace: a client may omit it in the body.
func namespaceOf(req admission.Request, d *appsv1.Deployment) string {
	if req.Namespace != "" {
		return req.Namespace
	}
	return d.Namespace
}

// denyCluster refuses a mgr whose namespace is not a Ceph cluster (or whose
// cluster could not be looked up), on metadata.namespace.
func denyCluster(ctx context.Context, webhook string, d *appsv1.Deployment, err error) admission.Response {
	fp := field.NewPath("metadata", "namespace")
	var missing *MissingClusterObjectsError
	if errors.As(err, &missing) {
		return respondDenied(ctx, webhook, deploymentGK, d.Name, field.ErrorList{field.Invalid(fp, missing.Namespace, err.Error())}, []string{DenialClusterMissing})
	}
	return respondDenied(ctx, webhook, deploymentGK, d.Name, field.ErrorList{field.InternalError(fp, err)}, []string{DenialBadRequest})
}

// denyOwner refuses a Deployment whose CephCluster owner could not be
// checked: a forged owner reference must not pass for Rook's.
func denyOwner(ctx context.Context, webhook string, d *appsv1.Deployment, err error) admission.Response {
	return respondDenied(ctx, webhook, deploymentGK, d.Name, field.ErrorList{field.InternalError(field.NewPath("metadata", "ownerReferences"),
		fmt.Errorf("%w; retry, and check that the webhook may get cephclusters.ceph.rook.io", err))}, []string{DenialOwnerUnverified})
}

// deny refuses the request for policy errs, counted by their fields.
func deny(ctx context.Context, webhook string, d *appsv1.Deployment, errs field.ErrorList) admission.Response {
	return respondDenied(ctx, webhook, deploymentGK, d.Name, errs, reasonsOf(errs))
}

// respondDenied answers with an Invalid status listing every field of the
// named object of kind gk, the form kubectl prints field by field.
func respondDenied(ctx context.Context, webhook string, gk schema.GroupKind, name string, errs field.ErrorList, reasons []string) admission.Response {
	count(webhook, OutcomeDenied, reasons...)
	logf.FromContext(ctx).V(1).Info("denied", "webhook", webhook, "fields", reasons)
	status := apierrors.NewInvalid(gk, name, errs).Status()
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}

package webhook

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/rook-mgr/mgr-webhook/mutate"
)

// Validator enforces the policy on the final mgr Deployment: the backstop
// behind the mutator, which sees the object after every mutating webhook.
type Validator struct {
	Clusters ClusterLookup
	Policy   *mutate.Policy
}

var _ admission.Handler = &Validator{}

const validateName = "validate"

// Handle validates CREATE and UPDATE of mgr Deployments.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		count(validateName, OutcomeSkipped)
		return admission.Allowed("")
	}
	d, resp, ok := decodeDeployment(req, req.Object.Raw, validateName)
	if !ok {
		return resp
	}
	var old *appsv1.Deployment
	if req.Operation == admissionv1.Update {
		if old, resp, ok = decodeDeployment(req, req.OldObject.Raw, validateName); !ok {
			return resp
		}
	}
	wasMgr := old != nil && mutate.IsMgr(old)
	if !mutate.IsMgr(d) && !wasMgr {
		count(validateName, OutcomeSkipped)
		return admission.Allowed("not a mgr Deployment")
	}
	info, err := v.Clusters.Lookup(namespaceOf(req, d))
	if err != nil {
		return denyCluster(ctx, validateName, d, err)
	}
	var errs field.ErrorList
	if old != nil {
		errs = mutate.ValidateUpdate(old, d, info, v.Policy)
	} else {
		errs = mutate.Validate(d, info, v.Policy)
	}
	if len(errs) > 0 {
		return deny(ctx, validateName, d, errs)
	}
	count(validateName, OutcomeAllowed)
	return admission.Allowed("")
}

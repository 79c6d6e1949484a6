package webhook

import (
	"crypto/tls"

	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/rook-mgr/mgr-webhook/mutate"
)

// The webhook configurations are generated from these markers into
// manifests/base/webhook/generated (make manifests); kustomize adds what
// controller-gen cannot express: objectSelector, namespaceSelector and
// matchConditions.
//
// +kubebuilder:webhookconfiguration:mutating=true,name=mgr-webhook
// +kubebuilder:webhookconfiguration:mutating=false,name=mgr-webhook
// +kubebuilder:webhook:path=/mutate-apps-v1-deployment,mutating=true,failurePolicy=fail,sideEffects=None,groups=apps,resources=deployments,verbs=create;update,versions=v1,name=mutate.mgr.ceph.rook.io,admissionReviewVersions=v1,reinvocationPolicy=IfNeeded,timeoutSeconds=5,matchPolicy=Equivalent,serviceName=mgr-webhook,serviceNamespace=mgr-webhook-system,servicePort=443
// +kubebuilder:webhook:path=/validate-apps-v1-deployment-scale,mutating=false,failurePolicy=fail,sideEffects=None,groups=apps,resources=deployments/scale,verbs=update,versions=v1,name=scale.mgr.ceph.rook.io,admissionReviewVersions=v1,timeoutSeconds=5,matchPolicy=Equivalent,serviceName=mgr-webhook,serviceNamespace=mgr-webhook-system,servicePort=443
// +kubebuilder:webhook:path=/validate-apps-v1-deployment,mutating=false,failurePolicy=fail,sideEffects=None,groups=apps,resources=deployments,verbs=create;update,versions=v1,name=validate.mgr.ceph.rook.io,admissionReviewVersions=v1,timeoutSeconds=5,matchPolicy=Equivalent,serviceName=mgr-webhook,serviceNamespace=mgr-webhook-system,servicePort=443

// Paths the webhook configurations point at.
const (
	MutatePath        = "/mutate-apps-v1-deployment"
	ValidatePath      = "/validate-apps-v1-deployment"
	ValidateScalePath = "/validate-apps-v1-deployment-scale"
)

// Register adds the mutating and validating webhooks of Deployments and the
// validating webhook of their scale subresource to srv. The framework caps
// request bodies, recovers and counts panics, and exports
// controller_runtime_webhook_* metrics per path.
func Register(srv ctrlwebhook.Server, clusters *ClusterInfoCache, policy *mutate.Policy) {
	srv.Register(MutatePath, &admission.Webhook{Handler: &Mutator{Clusters: clusters, Policy: policy}})
	srv.Register(ValidatePath, &admission.Webhook{Handler: &Validator{Clusters: clusters, Policy: policy}})
	srv.Register(ValidateScalePath, &admission.Webhook{Handler: &ScaleValidator{Mgrs: clusters}})
}

// TLSOptions sets TLS 1.2 as the floor and, unless enableHTTP2, serves
// HTTP/1.1 only (HTTP/2 exposed servers to rapid-reset attacks, CVE-2023-44487).
func TLSOptions(enableHTTP2 bool) []func(*tls.Config) {
	return []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion = tls.VersionTLS12
		if !enableHTTP2 {
			c.NextProtos = []string{"http/1.1"}
		}
	}}
}

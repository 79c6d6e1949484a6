// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/internal/servingtls"
	"github.com/rook-mgr/mgr-webhook/policy"
	"github.com/rook-mgr/mgr-webhook/version"
)

// The webhook configurations are generated from these markers into
// manifests/base/webhook/generated (make manifests); kustomize adds what
// controller-gen cannot express: objectSelector, namespaceSelector and
// matchConditions. Mgr writes take one round trip: the mutating webhook
// completes and judges; the final object is checked in the API server by
// the ValidatingAdmissionPolicy mgr-policy (manifests/base/policy/check.yaml).
// ValidatePath is served still, for configurations that route to it.
//
// +kubebuilder:webhookconfiguration:mutating=true,name=mgr-webhook
// +kubebuilder:webhookconfiguration:mutating=false,name=mgr-webhook
// +kubebuilder:webhook:path=/mutate-apps-v1-deployment,mutating=true,failurePolicy=fail,sideEffects=None,groups=apps,resources=deployments,verbs=create;update,versions=v1,name=mutate.mgr.ceph.rook.io,admissionReviewVersions=v1,reinvocationPolicy=IfNeeded,timeoutSeconds=5,matchPolicy=Equivalent,serviceName=mgr-webhook,serviceNamespace=mgr-webhook-system,servicePort=443
// +kubebuilder:webhook:path=/validate-apps-v1-deployment-scale,mutating=false,failurePolicy=fail,sideEffects=None,groups=apps,resources=deployments/scale,verbs=update,versions=v1,name=scale.mgr.ceph.rook.io,admissionReviewVersions=v1,timeoutSeconds=5,matchPolicy=Equivalent,serviceName=mgr-webhook,serviceNamespace=mgr-webhook-system,servicePort=443

// Paths the webhook configurations point at.
const (
	MutatePath        = "/mutate-apps-v1-deployment"
	ValidatePath      = "/validate-apps-v1-deployment"
	ValidateScalePath = "/validate-apps-v1-deployment-scale"
)

// Register adds the mutating and validating webhooks of Deployments and the
// validating webhook of their scale subresource to srv, bounded against
// their callers (Bound: body size, read deadline, requests in flight). The
// framework recovers and counts panics, and exports
// controller_runtime_webhook_* metrics per path.
func Register(srv ctrlwebhook.Server, clusters *ClusterInfoCache, live LiveLookup, policies PolicySource, drain *Drain) {
	bound := NewBound()
	for path, h := range map[string]struct {
		name string
		h    admission.Handler
	}{
		MutatePath:        {mutateName, &Mutator{Clusters: clusters, Live: live, Policy: policies, Version: version.Get().Version}},
		ValidatePath:      {validateName, &Validator{Clusters: clusters, Live: live, Policy: policies}},
		ValidateScalePath: {scaleName, &ScaleValidator{Mgrs: clusters, Live: live, Policy: policies}},
	} {
		hook := bound.Wrap(h.name, &admission.Webhook{Handler: h.h})
		if drain != nil {
			hook = drain.Wrap(hook)
		}
		srv.Register(path, hook)
	}
}

// Options configure the webhook Setup wires.
type Options struct {
	// Policy the Deployments are completed and judged by: a file's or the
	// built-in one, followed by the MgrPolicy PolicyName once read.
	Policy *policy.Store
	// PolicyName, when set, is the MgrPolicy the webhook enforces (watched
	// live; readiness holds until it has been read once).
	PolicyName string
	// Pod is this replica's Pod name: its entry in the MgrPolicy's
	// status.byPod ("" writes none).
	Pod string
	// Drain, when not nil, makes a termination graceful (see Drain).
	Drain *Drain
	// Namespaces, when not empty, are the only Ceph namespaces served: the
	// cluster cache watches each of them and nothing else (a namespaced
	// install, whose RBAC is RoleBindings in these namespaces).
	Namespaces []string
}

// Setup wires the webhook into mgr, the one place it is wired (cmd/mgr-webhook
// and every test harness call it): the cluster cache as a runnable, the three
// handlers on mgr's webhook server, /healthz, and a /readyz that holds until
// the server is up and the cache has listed (before that every namespace would
// look like it lacks its cluster objects). cfg is what the cache reads with
// (the webhook's own identity).
func Setup(mgr manager.Manager, cfg *rest.Config, o Options) (*ClusterInfoCache, error) {
	pol, drain := o.Policy, o.Drain
	clusters, err := NewClusterInfoCache(cfg, o.Namespaces...)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(clusters); err != nil {
		return nil, err
	}
	live, err := NewMetadataLookup(cfg)
	if err != nil {
		return nil, err
	}
	Register(mgr.GetWebhookServer(), clusters, live, pol, drain)
	if o.PolicyName != "" {
		if err := v1alpha1.AddToScheme(mgr.GetScheme()); err != nil {
			return nil, err
		}
		w := &policy.Watcher{Client: mgr.GetClient(), Name: o.PolicyName, Store: pol,
			Operation: v1alpha1.OperationWebhook, Pod: o.Pod}
		if err := w.SetupWithManager(mgr); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if drain != nil {
		if err := mgr.AddReadyzCheck("not-draining", drain.Ready); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("cluster-cache", func(*http.Request) error {
		if !clusters.HasSynced() {
			return errors.New("cluster object cache not synced")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return clusters, nil
}

// ServerOptions say where the webhook server listens and what it serves.
type ServerOptions struct {
	Host    string
	Port    int
	CertDir string // tls.crt and tls.key, reloaded when they change
	// EnableHTTP2 serves HTTP/2 as well (off: HTTP/1.1 only).
	EnableHTTP2 bool
	// ClientCAFile, when set, is a PEM bundle of the CAs whose client
	// certificates the server requires: the API server presents one where
	// its admission configuration (WebhookAdmissionConfiguration's
	// kubeConfigFile) gives it, and no other caller gets past the handshake.
	ClientCAFile string
	// MaxConnsPerSource and MaxConns cap the connections the server holds
	// open from one address and in all (connLimiter); 0 takes
	// DefaultMaxConnsPerSource and DefaultMaxConns.
	MaxConnsPerSource, MaxConns int
}

// NewServer is the webhook server, TLS options included: the one place it is
// built (cmd/mgr-webhook, the test harness and the benchmarks call it).
func NewServer(o ServerOptions) (ctrlwebhook.Server, error) {
	opts := servingtls.Options(o.EnableHTTP2)
	if o.ClientCAFile != "" {
		pem, err := os.ReadFile(o.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--client-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--client-ca-file %s holds no PEM certificate", o.ClientCAFile)
		}
		opts = append(opts, func(c *tls.Config) {
			c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
		})
	}
	if o.MaxConnsPerSource == 0 {
		o.MaxConnsPerSource = DefaultMaxConnsPerSource
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxConnsPerSource < 0 || o.MaxConns < o.MaxConnsPerSource {
		return nil, fmt.Errorf("--max-connections-per-source=%d, --max-connections=%d: want 0 < per source <= in all", o.MaxConnsPerSource, o.MaxConns)
	}
	if o.Port == 0 {
		o.Port = ctrlwebhook.DefaultPort
	}
	return &server{DefaultServer: &ctrlwebhook.DefaultServer{Options: ctrlwebhook.Options{Host: o.Host, Port: o.Port, CertDir: o.CertDir}},
		o: o, tlsOpts: opts}, nil
}

// PolicySource gives the policy in force and its hash (*policy.Store); a
// handler reads it once per request, so one request is judged by one policy.
type PolicySource interface {
	InForce() policy.InForce
}

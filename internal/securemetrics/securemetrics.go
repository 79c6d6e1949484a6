// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package securemetrics is how both components serve /metrics, as kubebuilder
// v4 scaffolds it: HTTPS (a self-signed certificate unless --metrics-cert-dir
// holds one) and each request authenticated (TokenReview) and authorized
// (SubjectAccessReview: get on the non-resource URL /metrics), so the
// metrics port gives nothing to a caller the cluster does not allow.
package securemetrics

import (
	"flag"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rook-mgr/mgr-webhook/internal/servingtls"
)

// Flags are the metrics endpoint's flags, alike in both binaries.
type Flags struct {
	BindAddress string
	Secure      bool
	CertDir     string
}

// Register adds --metrics-bind-address, --metrics-secure and --metrics-cert-dir.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.BindAddress, "metrics-bind-address", ":8443", "address of the Prometheus metrics endpoint; 0 disables it")
	fs.BoolVar(&f.Secure, "metrics-secure", true, "serve metrics over HTTPS to callers the API server authenticates and authorizes (get /metrics); false: plain HTTP to anyone")
	fs.StringVar(&f.CertDir, "metrics-cert-dir", "", "tls.crt and tls.key for the metrics endpoint (reloaded on change); empty: a self-signed certificate")
}

// RBAC of both components' metrics endpoints, its own ClusterRole
// (mgr-metrics-auth): reviews are cluster-scoped, so a namespaced install,
// which binds the components' other ClusterRoles per Ceph namespace, still
// binds this one cluster-wide.
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Options are the manager's metrics options for these flags.
func (f Flags) Options() metricsserver.Options {
	o := metricsserver.Options{BindAddress: f.BindAddress}
	if f.Secure {
		o.SecureServing = true
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
		o.CertDir = f.CertDir
		o.TLSOpts = servingtls.Options(false)
	}
	return o
}

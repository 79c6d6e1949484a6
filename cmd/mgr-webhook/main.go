// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Command mgr-webhook serves the mutating and validating admission webhooks
// for Ceph mgr Deployments.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/certs"
	"github.com/rook-mgr/mgr-webhook/cmd/internal/preamble"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/securemetrics"
	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/policy"
	"github.com/rook-mgr/mgr-webhook/webhook"
)

type options struct {
	certDir, host, policyFile, probeAddr  string
	policyName, podName, clientCAFile     string
	metrics                               securemetrics.Flags
	port, maxConnsPerSource, maxConns     int
	enableHTTP2, printPolicy, leaderElect bool

	namespaces string // the Ceph namespaces of a namespaced install; empty: all

	// Self-signed certificate mode.
	certMode, certSecret, namespace, serviceName, webhookConfig, extraSANs string
	caLifetime, certLifetime, certSettle, certCheckInterval                time.Duration
	shutdownDelay                                                          time.Duration

	preamble preamble.Flags
}

// BindFlags registers the flags on fs.
func (o *options) BindFlags(fs *flag.FlagSet) {
	// --kubeconfig is registered by controller-runtime (in-cluster config when unset).
	fs.StringVar(&o.certDir, "cert-dir", "/tmp/k8s-webhook-server/serving-certs", "directory with tls.crt and tls.key; reloaded when they change")
	fs.IntVar(&o.port, "port", 9443, "port the webhook server listens on")
	fs.StringVar(&o.host, "host", "", "address the webhook server binds to (all when empty)")
	fs.StringVar(&o.policyFile, "policy", "", "policy file (apiVersion mgr.ceph.rook.io/v1alpha1, kind Policy); built-in defaults when empty. With --policy-name, what is in force until the MgrPolicy is read")
	fs.StringVar(&o.policyName, "policy-name", "", "the MgrPolicy to enforce, watched live (the release manifests: default); empty: --policy only")
	fs.StringVar(&o.podName, "pod-name", os.Getenv("POD_NAME"), "this replica's Pod, its entry in the MgrPolicy's status.byPod (default $POD_NAME)")
	o.metrics.Register(fs)
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.BoolVar(&o.enableHTTP2, "enable-http2", false, "serve HTTP/2 as well (off: HTTP/1.1 only)")
	fs.IntVar(&o.maxConnsPerSource, "max-connections-per-source", webhook.DefaultMaxConnsPerSource, "connections held open from one address; more are closed at once")
	fs.IntVar(&o.maxConns, "max-connections", webhook.DefaultMaxConns, "connections held open in all; when all are taken, a caller holding fewer than the largest holder gets in and the largest holder's oldest connection is closed")
	fs.StringVar(&o.clientCAFile, "client-ca-file", "", "PEM file of the CAs whose client certificate every caller must present (the API server's, from its WebhookAdmissionConfiguration kubeConfigFile); empty: no client certificate asked")
	fs.BoolVar(&o.printPolicy, "print-policy", false, "print the effective policy as YAML and exit")
	fs.StringVar(&o.namespaces, "namespaces", "", "the Ceph namespaces to serve, comma-separated (a namespaced install: the webhook watches only these, and its RBAC may be RoleBindings in them); empty: every namespace")
	fs.StringVar(&o.certMode, "cert-mode", "files", `"files": serve tls.crt/tls.key from --cert-dir as provided (cert-manager, or by hand); "self-signed": create and rotate a CA and serving certificate in Secret --cert-secret and inject the CA into the webhook configurations`)
	fs.StringVar(&o.certSecret, "cert-secret", "mgr-webhook-certs", "self-signed: the Secret holding the CA and serving certificate")
	fs.StringVar(&o.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "self-signed: namespace of the Secret and Service (default $POD_NAMESPACE)")
	fs.StringVar(&o.serviceName, "service-name", contract.WebhookName, "self-signed: the webhook's Service, whose DNS names the certificate covers")
	fs.StringVar(&o.webhookConfig, "webhook-config-name", contract.WebhookName, "self-signed: name of the Mutating- and ValidatingWebhookConfiguration to inject the CA into")
	fs.StringVar(&o.extraSANs, "cert-extra-sans", "", "self-signed: more DNS names or IPs for the certificate, comma-separated")
	fs.DurationVar(&o.caLifetime, "ca-lifetime", certs.DefaultLifetimes.CA, "self-signed: CA lifetime (renewed with a third left)")
	fs.DurationVar(&o.certLifetime, "cert-lifetime", certs.DefaultLifetimes.Serving, "self-signed: serving certificate lifetime (renewed with a third left)")
	fs.DurationVar(&o.certSettle, "cert-settle", certs.DefaultLifetimes.Settle, "self-signed: how long a new CA is in the webhooks' caBundles before it signs, and a new serving certificate is out before the caBundles drop the CA of the one before (the API server's and the replicas' lag)")
	fs.DurationVar(&o.certCheckInterval, "cert-check-interval", time.Minute, "self-signed: how often certificates and caBundles are checked")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader among replicas; only the leader rotates certificates")
	fs.DurationVar(&o.shutdownDelay, "shutdown-delay", 5*time.Second, "on SIGTERM, how long to keep serving after readiness fails, while the Service's endpoints and the API server's connections move away")
	o.preamble.BindFlags(fs)
}

func main() {
	var o options
	o.BindFlags(flag.CommandLine)
	flag.Parse()
	if !o.preamble.Start(contract.WebhookName, os.Stdout, webhook.ServingCertificateExpiry(filepath.Join(o.certDir, "tls.crt"))) {
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, contract.WebhookName+":", err)
		os.Exit(1)
	}
}

func run(o options) error {
	policies, err := policy.FromFile(o.policyFile)
	if err != nil {
		return err
	}
	if o.printPolicy {
		return mutate.WritePolicy(os.Stdout, policies.Current())
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if o.certMode == "self-signed" {
		if err := setupSelfSigned(cfg, scheme, o); err != nil {
			return err
		}
	} else if o.certMode != "files" {
		return fmt.Errorf(`--cert-mode must be "files" or "self-signed", got %q`, o.certMode)
	}
	server, err := webhook.NewServer(webhook.ServerOptions{Host: o.host, Port: o.port, CertDir: o.certDir, EnableHTTP2: o.enableHTTP2, ClientCAFile: o.clientCAFile,
		MaxConnsPerSource: o.maxConnsPerSource, MaxConns: o.maxConns})
	if err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       o.metrics.Options(),
		HealthProbeBindAddress:        o.probeAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              contract.WebhookName + ".mgr.ceph.rook.io",
		LeaderElectionNamespace:       o.namespace,
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 server,
	})
	if err != nil {
		return err
	}
	drain := &webhook.Drain{Delay: o.shutdownDelay}
	namespaces := contract.SplitList(o.namespaces)
	if _, err := webhook.Setup(mgr, cfg, webhook.Options{Policy: policies, PolicyName: o.policyName, Pod: o.podName, Drain: drain, Namespaces: namespaces}); err != nil {
		return err
	}
	if o.certMode == "self-signed" {
		rot, syncer, err := selfSigned(cfg, scheme, o)
		if err != nil {
			return err
		}
		rot.Recorder = mgr.GetEventRecorder(contract.WebhookName)
		if err := mgr.Add(rot); err != nil {
			return err
		}
		if err := mgr.Add(syncer); err != nil {
			return err
		}
	}
	ctrl.Log.Info("starting mgr-webhook", "port", o.port, "certDir", o.certDir, "policyFile", o.policyFile, "policyName", o.policyName, "namespaces", namespaces)
	return mgr.Start(drain.Context(ctrl.SetupSignalHandler()))
}

// selfSigned builds the certificate rotator (leader only) and syncer (every replica).
func selfSigned(cfg *rest.Config, scheme *runtime.Scheme, o options) (*certs.Rotator, *certs.Syncer, error) {
	if o.namespace == "" {
		return nil, nil, errors.New("--cert-mode=self-signed needs --namespace (or $POD_NAMESPACE)")
	}
	// A serving certificate is renewed with a third of its life left, and a
	// new CA may take a check and the settle time to sign: that must fit.
	if o.caLifetime < o.certLifetime {
		return nil, nil, fmt.Errorf("--ca-lifetime %s is shorter than --cert-lifetime %s: a serving certificate never outlives its CA", o.caLifetime, o.certLifetime)
	}
	if o.certLifetime/3 <= o.certSettle+o.certCheckInterval {
		return nil, nil, fmt.Errorf("--cert-lifetime %s: a third of it must exceed --cert-settle (%s) + --cert-check-interval (%s)", o.certLifetime, o.certSettle, o.certCheckInterval)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	rot := &certs.Rotator{
		Client: cl, Namespace: o.namespace, SecretName: o.certSecret, WebhookConfigName: o.webhookConfig,
		Hosts:     certs.ServiceHosts(o.serviceName, o.namespace, contract.SplitList(o.extraSANs)...),
		Lifetimes: certs.Lifetimes{CA: o.caLifetime, Serving: o.certLifetime, Settle: o.certSettle},
		Interval:  o.certCheckInterval,
	}
	return rot, &certs.Syncer{Clientset: cs, Namespace: o.namespace, SecretName: o.certSecret, CertDir: o.certDir}, nil
}

// setupSelfSigned makes sure a serving certificate exists and is in --cert-dir
// before the webhook server starts. Every replica may try the first write:
// the Secret is written with optimistic concurrency, so only one wins.
func setupSelfSigned(cfg *rest.Config, scheme *runtime.Scheme, o options) error {
	rot, syncer, err := selfSigned(cfg, scheme, o)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Checked until the Secret holds a certificate: a new CA must settle in
	// caBundles the webhooks already carry before it signs one.
	return syncer.WaitAndWrite(ctx, 2*time.Minute, func(ctx context.Context) {
		if err := rot.Ensure(ctx); err != nil {
			ctrl.Log.V(1).Info("certificate check lost to another replica or failed; waiting for the Secret", "error", err.Error())
		}
	})
}

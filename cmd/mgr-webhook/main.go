// Command mgr-webhook serves the mutating and validating admission webhooks
// for Ceph mgr Deployments.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/webhook"
)

type options struct {
	certDir, host, policyFile, metricsAddr, probeAddr string
	port                                              int
	enableHTTP2, printPolicy                          bool
}

func main() {
	var o options
	zapOpts := zap.Options{}
	// --kubeconfig is registered by controller-runtime (in-cluster config when unset).
	flag.StringVar(&o.certDir, "cert-dir", "/tmp/k8s-webhook-server/serving-certs", "directory with tls.crt and tls.key; reloaded when they change")
	flag.IntVar(&o.port, "port", 9443, "port the webhook server listens on")
	flag.StringVar(&o.host, "host", "", "address the webhook server binds to (all when empty)")
	flag.StringVar(&o.policyFile, "policy", "", "policy file (apiVersion mgr.ceph.rook.io/v1alpha1, kind Policy); built-in defaults when empty")
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint; 0 disables it")
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	flag.BoolVar(&o.enableHTTP2, "enable-http2", false, "serve HTTP/2 as well (off: HTTP/1.1 only)")
	flag.BoolVar(&o.printPolicy, "print-policy", false, "print the effective policy as YAML and exit")
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "mgr-webhook:", err)
		os.Exit(1)
	}
}

func loadPolicy(path string) (*mutate.Policy, error) {
	if path == "" {
		return mutate.DefaultPolicy(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return mutate.ParsePolicy(data)
}

func run(o options) error {
	policy, err := loadPolicy(o.policyFile)
	if err != nil {
		return err
	}
	if o.printPolicy {
		return mutate.WritePolicy(os.Stdout, policy)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress: o.probeAddr,
		WebhookServer: ctrlwebhook.NewServer(ctrlwebhook.Options{
			Host: o.host, Port: o.port, CertDir: o.certDir, TLSOpts: webhook.TLSOptions(o.enableHTTP2),
		}),
	})
	if err != nil {
		return err
	}
	clusters, err := webhook.NewClusterInfoCache(cfg)
	if err != nil {
		return err
	}
	if err := mgr.Add(clusters); err != nil {
		return err
	}
	webhook.Register(mgr.GetWebhookServer(), scheme, clusters, policy)
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	// Ready only once serving and once the cluster cache has listed: before
	// that every namespace would look like it lacks its cluster objects.
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("cluster-cache", func(*http.Request) error {
		if !clusters.HasSynced() {
			return errors.New("cluster object cache not synced")
		}
		return nil
	}); err != nil {
		return err
	}
	ctrl.Log.Info("starting mgr-webhook", "port", o.port, "certDir", o.certDir, "policy", o.policyFile)
	return mgr.Start(ctrl.SetupSignalHandler())
}

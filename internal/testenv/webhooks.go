package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/webhook"
)

// ServeWebhooks serves the mutating and validating webhooks in this process,
// wired as cmd/mgr-webhook wires them, on the address and certificates envtest
// configured the API server to call, until ctx ends. It returns once the
// server answers TLS and the cluster cache has synced.
func ServeWebhooks(ctx context.Context, a *APIServer, policy *mutate.Policy) (*webhook.ClusterInfoCache, error) {
	wo := a.Env.WebhookInstallOptions
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(a.Config, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: ctrlwebhook.NewServer(ctrlwebhook.Options{
			Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir, TLSOpts: webhook.TLSOptions(false),
		}),
	})
	if err != nil {
		return nil, err
	}
	clusters, err := webhook.NewClusterInfoCache(a.Config)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(clusters); err != nil {
		return nil, err
	}
	webhook.Register(mgr.GetWebhookServer(), clusters, policy)
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Println("webhook manager:", err)
		}
	}()
	addr := net.JoinHostPort(wo.LocalServingHost, strconv.Itoa(wo.LocalServingPort))
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only probes that the server is up
		if err != nil {
			return false, nil
		}
		conn.Close()
		return clusters.HasSynced(), nil
	})
	return clusters, err
}

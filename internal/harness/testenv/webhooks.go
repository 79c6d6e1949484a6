// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/policy"
	"github.com/rook-mgr/mgr-webhook/webhook"
)

// WebhookServiceAccount is the webhook's ServiceAccount in the shipped manifests.
var WebhookServiceAccount = ServiceAccountUser("mgr-webhook-system", "mgr-webhook")

// ServeWebhooks serves the webhooks in this process, wired by webhook.Setup as
// cmd/mgr-webhook wires them, on the address and certificates envtest
// configured the API server to call, until ctx ends. It applies the RBAC of
// manifests/base and runs as the webhook's ServiceAccount, so the tests prove
// that the shipped RBAC suffices. It returns once the server answers TLS and
// the cluster cache has synced.
func ServeWebhooks(ctx context.Context, a *APIServer, p *mutate.Policy) (*webhook.ClusterInfoCache, error) {
	return ServeWebhooksWith(ctx, a, webhook.Options{Policy: policy.Static(p)})
}

// ServeWebhooksWith is ServeWebhooks with the webhook's Options (a watched
// MgrPolicy: PolicyName and Pod).
func ServeWebhooksWith(ctx context.Context, a *APIServer, o webhook.Options) (*webhook.ClusterInfoCache, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	if _, err := ApplyRBAC(ctx, a.Client, filepath.Join(root, "manifests", "base")); err != nil {
		return nil, err
	}
	cfg := a.ConfigAs(WebhookServiceAccount)
	wo := a.Env.WebhookInstallOptions
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	server, err := webhook.NewServer(webhook.ServerOptions{Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir})
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:        scheme,
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: server,
	})
	if err != nil {
		return nil, err
	}
	clusters, err := webhook.Setup(mgr, cfg, o)
	if err != nil {
		return nil, err
	}
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

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package integration tests the admission webhooks through a real
// kube-apiserver: the webhook configurations of manifests/base are installed,
// the handlers serve them over TLS, and every request goes through the API
// server's admission chain as a user's kubectl apply would.
package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/webhook"
)

var (
	api      *testenv.APIServer
	k8s      client.Client
	repoRoot string
	// clusters is the webhook's cache of cluster objects.
	clusters *webhook.ClusterInfoCache
	// cephClusters are the namespaces made Ceph clusters for the tests; rook-ceph
	// carries the seed's fsid.
	cephClusters = []testenv.CephCluster{
		{Namespace: "rook-ceph", FSID: "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b", MonHost: "[v2:10.0.0.1:3300,v1:10.0.0.1:6789]", Members: "a",
			AdminKeyring: "[client.admin]\n\tkey = not-a-real-key\n"},
		{Namespace: "ceph-east", FSID: "47913c99-d1ed-4a9b-bd55-2b49490b1229", MonHost: "[v2:10.0.0.2:3300,v1:10.0.0.2:6789]", Members: "a",
			AdminKeyring: "[client.admin]\n\tkey = not-a-real-key\n"},
		// TestCleanupNeverBlocked tears this one down.
		{Namespace: "ceph-teardown", FSID: "5d0f8c8e-7a53-4c55-9a4c-5b7e8f0a9d21", MonHost: "[v2:10.0.0.3:3300]", Members: "a",
			AdminKeyring: "[client.admin]\n\tkey = not-a-real-key\n"},
	}
)

// policy is the default policy with the exemptions its owner granted (the
// only Deployments that may opt out), at a site that still runs Pacific: an
// end-of-life release its policy admits by lowering the minimum, as the
// release guard is judged on a Pacific cluster here.
func policy() *mutate.Policy {
	p := mutate.DefaultPolicy()
	p.Images.MinimumCephVersion = "16.2.0"
	p.Exemptions = []mutate.Exemption{{Namespace: "rook-ceph", Names: []string{"rook-ceph-mgr-z", "rook-ceph-mgr-legacy"}}}
	return p
}

func TestMain(m *testing.M) { testenv.Main(m, "integration", run) }

func run(m *testing.M) (int, error) {
	var err error
	if repoRoot, err = testenv.RepoRoot(); err != nil {
		return 1, err
	}
	api, err = testenv.StartAPIServerWith(testenv.APIServerOptions{
		ShippedWebhooks: true,
		CRDs:            []string{filepath.Join(repoRoot, "test", "crds"), filepath.Join(repoRoot, "manifests", "base", "policy", "generated", "mgr.ceph.rook.io_cephreleases.yaml")},
	})
	if err != nil {
		return 1, err
	}
	defer api.Stop()
	if err := v1alpha1.AddToScheme(api.Scheme); err != nil { // CephRelease
		return 1, err
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clusters, err = testenv.ServeWebhooks(ctx, api, policy())
	if err != nil {
		return 1, err
	}
	k8s = api.Client
	for _, c := range cephClusters {
		if err := c.Create(ctx, k8s); err != nil {
			return 1, err
		}
		// The webhook reads clusters from its informer cache: wait until it sees them.
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			_, err := clusters.Lookup(c.Namespace)
			return err == nil, nil
		}); err != nil {
			return 1, fmt.Errorf("webhook cache never saw cluster %s: %w", c.Namespace, err)
		}
	}
	return m.Run(), nil
}

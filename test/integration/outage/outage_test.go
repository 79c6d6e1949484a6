// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package outage tests what a webhook outage does to the cluster it guards,
// on the shipped webhook configurations (failurePolicy Fail) and a real
// kube-apiserver: the webhook stopped, then hanging past its timeoutSeconds.
package outage

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

const ns = "rook-ceph"

func TestWebhookOutage(t *testing.T) {
	api, err := testenv.StartWithShippedWebhooks()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Stop()
	ctx := t.Context()
	k8s := api.Client
	if err := (testenv.CephCluster{Namespace: ns, FSID: "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b", MonHost: "[v2:10.0.0.1:3300]", Members: "a",
		AdminKeyring: "[client.admin]\n\tkey = not-a-real-key\n"}).Create(ctx, k8s); err != nil {
		t.Fatal(err)
	}
	serveCtx, stop := context.WithCancel(ctx)
	clusters, err := testenv.ServeWebhooks(serveCtx, api, mutate.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := clusters.Lookup(ns)
		return err == nil, nil
	}); err != nil {
		t.Fatal(err)
	}

	n := 0
	web := func() *appsv1.Deployment {
		n++
		return deployment(fmt.Sprintf("web-%d", n), map[string]string{"app": "web"})
	}
	mgr := func(id string) *appsv1.Deployment {
		d := deployment(contract.DeploymentName(id), map[string]string{contract.LabelApp: contract.AppName, contract.LabelMgrID: id})
		d.Spec.Selector, d.Spec.Template.Labels = nil, nil
		return d
	}
	// latency is the median time of k creates of non-mgr Deployments, each
	// of which must be admitted: with failurePolicy Fail, a call to the
	// stopped or hanging webhook would refuse it, so their admission proves
	// the API server never called. The medians are reported, not judged: a
	// loaded machine moves them (a 3× bound once failed a run beside other
	// jobs at 3.12×).
	latency := func(k int) time.Duration {
		var ds []time.Duration
		for range k {
			start := time.Now()
			if err := k8s.Create(ctx, web()); err != nil {
				t.Fatalf("a non-mgr Deployment refused: %v", err)
			}
			ds = append(ds, time.Since(start))
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}

	// Serving: the baseline.
	if err := k8s.Create(ctx, mgr("a")); err != nil {
		t.Fatalf("mgr a while the webhook serves: %v", err)
	}
	up := latency(30)

	// Stopped.
	stop()
	addr := net.JoinHostPort(api.Env.WebhookInstallOptions.LocalServingHost, strconv.Itoa(api.Env.WebhookInstallOptions.LocalServingPort))
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err != nil, nil
	}); err != nil {
		t.Fatal("the webhook port stays open after the webhook stopped")
	}
	down := latency(30)
	start := time.Now()
	err = k8s.Create(ctx, mgr("b"))
	refusedIn := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Fatalf("mgr b with the webhook stopped: %v, want a refusal naming the webhook", err)
	}
	operatorCanAct(t, k8s, "stopped")

	// Hanging: a TLS server on the webhook's port that never answers.
	hang := make(chan struct{})
	defer close(hang)
	certs := api.Env.WebhookInstallOptions.LocalServingCertDir
	pair, err := tls.LoadX509KeyPair(filepath.Join(certs, "tls.crt"), filepath.Join(certs, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", addr, &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hang }), ReadHeaderTimeout: time.Second}
	go srv.Serve(l) //nolint:errcheck // closed below
	defer srv.Close()
	hanging := latency(30)
	start = time.Now()
	err = k8s.Create(ctx, mgr("c"))
	timedOutIn := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Fatalf("mgr c with the webhook hanging: %v, want a refusal naming the webhook", err)
	}
	operatorCanAct(t, k8s, "hanging")

	// Nothing incomplete was stored: the only mgr is a, completed.
	list := &appsv1.DeploymentList{}
	if err := k8s.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != contract.DeploymentName("a") || len(list.Items[0].Spec.Template.Spec.InitContainers) == 0 {
		t.Errorf("stored mgrs %d (want only a, complete)", len(list.Items))
	}
	t.Logf("non-mgr create, median of 30: %s serving, %s stopped (%.2f×), %s hanging (%.2f×); mgr refused in %s stopped, %s hanging (timeoutSeconds 5)",
		up.Round(time.Microsecond), down.Round(time.Microsecond), float64(down)/float64(up),
		hanging.Round(time.Microsecond), float64(hanging)/float64(up), refusedIn.Round(time.Millisecond), timedOutIn.Round(time.Millisecond))
}

// operatorCanAct: during an outage, an operator can still change the webhook
// configurations (the way out) and work in the webhook's own namespace, even
// with a mgr-labelled Deployment there.
func operatorCanAct(t *testing.T, k8s client.Client, outage string) {
	t.Helper()
	ctx := t.Context()
	for _, cfg := range []client.Object{&admissionregistrationv1.MutatingWebhookConfiguration{}, &admissionregistrationv1.ValidatingWebhookConfiguration{}} {
		if err := k8s.Get(ctx, client.ObjectKey{Name: "mgr-webhook"}, cfg); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(cfg.DeepCopyObject().(client.Object))
		cfg.SetLabels(map[string]string{"outage-drill": outage})
		if err := k8s.Patch(ctx, cfg, patch); err != nil {
			t.Errorf("webhook %s: changing %T: %v", outage, cfg, err)
		}
	}
	own := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mgr-webhook-system"}}
	if err := k8s.Create(ctx, own); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	d := deployment("rook-ceph-mgr-x-"+outage, map[string]string{contract.LabelApp: contract.AppName, contract.LabelMgrID: "x"})
	d.Namespace = own.Name
	if err := k8s.Create(ctx, d); err != nil {
		t.Errorf("webhook %s: a Deployment in the webhook's own namespace: %v", outage, err)
	}
}

func deployment(name string, labels map[string]string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	if err := yaml.Unmarshal([]byte(`
spec:
  template:
    spec:
      containers: [{name: mgr, image: quay.io/ceph/ceph:v19.2.3}]
`), d); err != nil {
		panic(err)
	}
	d.Name, d.Namespace, d.Labels = name, ns, labels
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	d.Spec.Template.Labels = labels
	return d
}

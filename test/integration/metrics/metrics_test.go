// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package metrics runs both binaries as their ServiceAccounts, with the
// shipped RBAC, serving metrics as installed (HTTPS, every scrape
// authenticated and authorized by the API server), and scrapes them as a
// Prometheus bound to the monitoring component's metrics-reader role would,
// and as callers that are not.
package metrics

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

const ns = "mgr-webhook-system"

func TestMetricsAreServedOnlyToAuthorizedScrapers(t *testing.T) {
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	binDir := testenv.BuildForTest(t, "mgr-webhook", "mgr-bootstrap")
	api, err := testenv.StartWithShippedWebhooks()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Stop) // after the processes (cleanups run last-in first-out)
	// The components' RBAC as shipped; the monitoring component's reader
	// role, bound to a stand-in for Prometheus.
	if _, err := testenv.ApplyRBAC(ctx, api.Client, filepath.Join(root, "manifests", "overlays", "self-signed")); err != nil {
		t.Fatal(err)
	}
	reader, err := os.ReadFile(filepath.Join(root, "manifests", "components", "monitoring", "metrics-reader.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	api.MustKubectl(t, strings.ReplaceAll(strings.ReplaceAll(string(reader), "name: prometheus-k8s", "name: prometheus"), "namespace: monitoring", "namespace: "+ns), "apply", "-f", "-")
	api.MustKubectl(t, "", "-n", ns, "create", "serviceaccount", "prometheus")
	api.MustKubectl(t, "", "-n", ns, "create", "serviceaccount", "intruder")
	token := func(sa string) string {
		return strings.TrimSpace(api.MustKubectl(t, "", "-n", ns, "create", "token", sa))
	}

	certDir := api.Env.WebhookInstallOptions.LocalServingCertDir
	servingPEM, err := os.ReadFile(filepath.Join(certDir, "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(servingPEM)
	serving, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	start := func(name string, args ...string) string {
		t.Helper()
		kc, err := api.KubeconfigAs(testenv.ServiceAccountUser(ns, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(kc) })
		port, err := testenv.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		// --metrics-secure is the default: not passed.
		p, err := testenv.Spawn(filepath.Join(binDir, name), filepath.Join(t.TempDir(), name+".log"),
			append([]string{"--kubeconfig", kc, "--metrics-bind-address=127.0.0.1:" + strconv.Itoa(port), "--health-probe-bind-address=0",
				"--namespaces=rook-ceph"}, args...)...) // as the overlay, whose RBAC they run with, serves
		if err != nil {
			t.Fatal(err)
		}
		p.StopAtCleanup(t, 5*time.Second)
		return fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
	}
	wo := api.Env.WebhookInstallOptions
	urls := map[string]string{
		"mgr-webhook": start("mgr-webhook", "--cert-dir="+certDir, "--host=127.0.0.1", "--port="+strconv.Itoa(wo.LocalServingPort)),
		"mgr-bootstrap": start("mgr-bootstrap", "--leader-elect=false", "--policy="+filepath.Join(root, "manifests", "base", "webhook", "policy.yaml"),
			"--ceph-binary=/bin/false"),
	}
	// The serving certificate is self-signed: what is checked here is who
	// may read, not whom the scraper trusts (the ServiceMonitors skip it too).
	httpc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	scrape := func(url, bearer string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	prometheus, intruder := token("prometheus"), token("intruder")
	families := map[string]map[string]*model.Sample{}
	for name, url := range urls {
		var code int
		var body string
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			code, body = scrape(url, prometheus)
			return code == http.StatusOK, nil
		}); err != nil {
			t.Fatalf("%s: Prometheus's scrape answered %d: %.300s", name, code, body)
		}
		if plain, _ := scrape(strings.Replace(url, "https://", "http://", 1), prometheus); plain == http.StatusOK {
			t.Errorf("%s serves metrics over plain HTTP", name)
		}
		// controller-runtime's filter answers a token the API server rejects
		// with 500 (it treats the TokenReview's verdict as an error): refused,
		// which is what matters here.
		if code, b := scrape(url, "not-a-token"); code == http.StatusOK || strings.Contains(b, "mgr_webhook_build_info") {
			t.Errorf("%s: a forged token answered %d with metrics", name, code)
		}
		if code, _ := scrape(url, ""); code != http.StatusUnauthorized {
			t.Errorf("%s: no token answered %d, want 401", name, code)
		}
		if code, _ := scrape(url, intruder); code != http.StatusForbidden {
			t.Errorf("%s: a token without get /metrics answered %d, want 403", name, code)
		}
		samples := map[string]*model.Sample{}
		dec := expfmt.NewDecoder(strings.NewReader(body), expfmt.NewFormat(expfmt.TypeTextPlain))
		vec, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: model.Now()}, decodeAll(t, dec)...)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range vec {
			samples[s.Metric.String()] = s
		}
		families[name] = samples
	}

	expiry := families["mgr-webhook"][`mgr_webhook_serving_certificate_expiry_timestamp_seconds`]
	if expiry == nil || int64(expiry.Value) != serving.NotAfter.Unix() {
		t.Errorf("mgr_webhook_serving_certificate_expiry_timestamp_seconds = %v, want the served certificate's NotAfter %d", expiry, serving.NotAfter.Unix())
	}
	// The alerts' webhook series exist before any admission, at 0.
	for _, name := range []string{"mgr_webhook_admissions_total", "mgr_webhook_denials_total"} {
		found := false
		for key, s := range families["mgr-webhook"] {
			found = found || strings.HasPrefix(key, name+"{") && s.Value == 0
		}
		if !found {
			t.Errorf("a fresh webhook exports no %s series at 0", name)
		}
	}
	for _, phase := range []string{"Pending", "WaitingForPod", "WaitingForMgr", "Ready", "CephUnavailable", "Error"} {
		key := fmt.Sprintf(`mgr_bootstrap_mgrs{phase=%q}`, phase)
		if s := families["mgr-bootstrap"][key]; s == nil || s.Value != 0 {
			t.Errorf("%s = %v, want 0 (no mgrs yet)", key, s)
		}
	}
}

func decodeAll(t *testing.T, dec expfmt.Decoder) []*dto.MetricFamily {
	t.Helper()
	var mfs []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err != nil {
			if errors.Is(err, io.EOF) {
				return mfs
			}
			t.Fatal(err)
		}
		mfs = append(mfs, mf)
	}
}

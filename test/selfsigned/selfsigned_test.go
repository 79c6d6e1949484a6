// Package selfsigned runs the real mgr-webhook binary in self-signed mode
// against a real kube-apiserver: it creates its certificates, injects its CA
// into the webhook configurations, and rotates both while admissions run.
package selfsigned

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/certs"
	"github.com/rook-mgr/mgr-webhook/internal/testenv"
)

const ns = "mgr-webhook-system"

func TestSelfSignedRotationUnderLoad(t *testing.T) {
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "mgr-webhook")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(root, "cmd", "mgr-webhook")).CombinedOutput(); err != nil {
		t.Fatalf("building mgr-webhook: %v\n%s", err, out)
	}
	manifests, err := testenv.WebhookManifests()
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(manifests)
	api, err := testenv.StartAPIServer(manifests)
	if err != nil {
		t.Fatal(err)
	}
	defer api.Stop()
	k8s := api.Client
	// The webhook runs as its ServiceAccount with the RBAC of the self-signed
	// overlay, applied for real: the test fails if that RBAC is not enough.
	applyRBAC(t, k8s, filepath.Join(root, "manifests", "overlays", "self-signed"))
	kubeconfig, err := api.KubeconfigAs("system:serviceaccount:" + ns + ":mgr-webhook")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(kubeconfig)
	if out, err := exec.Command(api.Kubectl, "--kubeconfig", kubeconfig, "get", "secrets", "-A").CombinedOutput(); err == nil || !strings.Contains(string(out), "forbidden") {
		t.Fatalf("the webhook's ServiceAccount may list every Secret (%v): %s", err, out)
	}
	cluster := testenv.CephCluster{Namespace: "rook-ceph", FSID: "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b", MonHost: "v2:10.0.0.1:3300", Members: "a", AdminKeyring: "[client.admin]\n"}
	if err := cluster.Create(ctx, k8s); err != nil {
		t.Fatal(err)
	}
	envtestCA := mutatingBundle(t, k8s)

	wo := api.Env.WebhookInstallOptions
	probe, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	certDir := t.TempDir()
	proc, err := testenv.Spawn(bin, filepath.Join(t.TempDir(), "mgr-webhook.log"),
		"--kubeconfig", kubeconfig, "--cert-mode=self-signed", "--namespace="+ns, "--cert-dir="+certDir,
		"--host=127.0.0.1", "--port="+strconv.Itoa(wo.LocalServingPort), "--cert-extra-sans=127.0.0.1",
		"--cert-lifetime=12s", "--ca-lifetime=40s", "--cert-check-interval=1s", "--leader-elect",
		"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(probe))
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Stop(10 * time.Second)
	defer func() {
		if t.Failed() {
			log, _ := os.ReadFile(proc.Log)
			t.Logf("mgr-webhook log:\n%s", log)
		}
	}()
	waitFor(t, 60*time.Second, "mgr-webhook ready", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", probe))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	// A second replica: it serves what the Secret holds; the leader writes.
	port2, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	proc2, err := testenv.Spawn(bin, filepath.Join(t.TempDir(), "mgr-webhook-2.log"),
		"--kubeconfig", kubeconfig, "--cert-mode=self-signed", "--namespace="+ns, "--cert-dir="+t.TempDir(),
		"--host=127.0.0.1", "--port="+strconv.Itoa(port2), "--cert-extra-sans=127.0.0.1",
		"--cert-lifetime=12s", "--ca-lifetime=40s", "--cert-check-interval=1s", "--leader-elect",
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	if err != nil {
		t.Fatal(err)
	}
	defer proc2.Stop(10 * time.Second)

	// The webhook put its own CA into the configurations.
	secret := &corev1.Secret{}
	waitFor(t, 20*time.Second, "caBundle injected", func() bool {
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mgr-webhook-certs"}, secret) == nil &&
			bytes.Equal(mutatingBundle(t, k8s), secret.Data[certs.CACertKey]) && !bytes.Equal(secret.Data[certs.CACertKey], envtestCA)
	})

	// A load of admissions through the API server while certificates rotate.
	serials, issuers := watchServedCerts(t, wo.LocalServingPort, 35*time.Second)
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(35 * time.Second)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				d := minimal(t, root, fmt.Sprintf("rook-ceph-mgr-l%d-%d", w, i), fmt.Sprintf("l%d-%d", w, i))
				if err := k8s.Create(ctx, d); err != nil {
					failed.Add(1)
					t.Logf("admission failed: %v", err)
					continue
				}
				ok.Add(1)
				if err := k8s.Delete(ctx, d); err != nil {
					t.Logf("delete: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	s, is := serials(), issuers()
	t.Logf("%d admissions, %d failed; %d serving certificates and %d CAs seen", ok.Load(), failed.Load(), len(s), len(is))
	if failed.Load() != 0 || ok.Load() < 100 {
		t.Errorf("%d of %d admissions failed during rotation; want 0 failed of at least 100", failed.Load(), ok.Load()+failed.Load())
	}
	if len(s) < 3 || len(is) < 2 {
		t.Errorf("served %d serving certificates from %d CAs in 35s; want the serving certificate (12s) and the CA (40s) rotated", len(s), len(is))
	}

	// Both replicas serve the certificate the Secret holds now.
	waitFor(t, 10*time.Second, "both replicas serve the Secret's certificate", func() bool {
		cur := &corev1.Secret{}
		if k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mgr-webhook-certs"}, cur) != nil {
			return false
		}
		want := leafSerial(cur.Data[certs.TLSCertKey])
		return want != "" && servedSerial(wo.LocalServingPort) == want && servedSerial(port2) == want
	})
	if proc2.Exited() {
		t.Error("the second replica exited")
	}

	// A corrupt key in the Secret is regenerated, with an Event saying why.
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mgr-webhook-certs"}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data[certs.TLSKeyKey] = []byte("garbage")
	if err := k8s.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "corrupt key regenerated", func() bool {
		s := &corev1.Secret{}
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mgr-webhook-certs"}, s) == nil && !bytes.Equal(s.Data[certs.TLSKeyKey], []byte("garbage"))
	})
	waitFor(t, 20*time.Second, "CertificateRegenerated Event", func() bool {
		evs := &eventsv1.EventList{}
		_ = k8s.List(ctx, evs, client.InNamespace(ns))
		for _, e := range evs.Items {
			if e.Reason == "CertificateRegenerated" && bytes.Contains([]byte(e.Note), []byte("unusable")) {
				return true
			}
		}
		return false
	})

	// A caBundle removed by hand is restored by the next check.
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: "mgr-webhook"}, m); err != nil {
		t.Fatal(err)
	}
	m.Webhooks[0].ClientConfig.CABundle = nil
	if err := k8s.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "caBundle restored", func() bool { return len(mutatingBundle(t, k8s)) > 0 })
	if err := k8s.Create(ctx, minimal(t, root, "rook-ceph-mgr-z", "z")); err != nil {
		t.Errorf("admission after the repairs: %v", err)
	}
	if proc.Exited() {
		t.Error("mgr-webhook exited")
	}
}

// applyRBAC creates the namespace, ServiceAccounts and RBAC of an overlay
// (not its webhook configurations: envtest installed those pointing here).
func applyRBAC(t *testing.T, k8s client.Client, overlay string) {
	t.Helper()
	n, err := testenv.ApplyRBAC(context.Background(), k8s, overlay)
	if err != nil {
		t.Fatal(err)
	}
	if n < 8 {
		t.Fatalf("only %d RBAC objects in %s", n, overlay)
	}
}

func servedSerial(port int) string {
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads the served certificate
	if err != nil {
		return ""
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func leafSerial(certPEM []byte) string {
	b, _ := pem.Decode(certPEM)
	if b == nil {
		return ""
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return ""
	}
	return c.SerialNumber.String()
}

func mutatingBundle(t *testing.T, k8s client.Client) []byte {
	t.Helper()
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: "mgr-webhook"}, m); err != nil {
		t.Fatal(err)
	}
	return m.Webhooks[0].ClientConfig.CABundle
}

func minimal(t *testing.T, root, name, id string) *appsv1.Deployment {
	data, err := os.ReadFile(filepath.Join(root, "manifests", "examples", "minimal-mgr.yaml"))
	if err != nil {
		t.Error(err)
		return nil
	}
	d := &appsv1.Deployment{}
	if err := yaml.Unmarshal(data, d); err != nil {
		t.Error(err)
	}
	d.Name, d.Labels["mgr"] = name, id
	return d
}

// watchServedCerts dials the webhook every 100ms and records the serial and
// issuer of the certificate it serves.
func watchServedCerts(t *testing.T, port int, d time.Duration) (func() map[string]bool, func() map[string]bool) {
	var mu sync.Mutex
	serials, issuers := map[string]bool{}, map[string]bool{}
	stop := time.Now().Add(d)
	go func() {
		for time.Now().Before(stop) {
			conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads the served certificate
			if err == nil {
				leaf := conn.ConnectionState().PeerCertificates[0]
				mu.Lock()
				serials[(*big.Int)(leaf.SerialNumber).String()] = true
				issuers[leaf.Issuer.CommonName] = true
				mu.Unlock()
				conn.Close()
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	snapshot := func(m map[string]bool) func() map[string]bool {
		return func() map[string]bool {
			mu.Lock()
			defer mu.Unlock()
			out := map[string]bool{}
			for k := range m {
				out[k] = true
			}
			return out
		}
	}
	return snapshot(serials), snapshot(issuers)
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("%s: not within %s", what, timeout)
	}
}

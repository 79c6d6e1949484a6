// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package selfsigned runs the real mgr-webhook binary in self-signed mode
// against a real kube-apiserver: it creates its certificates, injects its CA
// into the webhook configurations, and rotates both while admissions run.
package selfsigned

import (
	"bytes"
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
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
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/certs"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/test/internal/await"
)

const ns = "mgr-webhook-system"

func TestSelfSignedRotationUnderLoad(t *testing.T) {
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	binDir := testenv.BuildForTest(t, "mgr-webhook")
	bin := filepath.Join(binDir, "mgr-webhook")
	api, err := testenv.StartWithShippedWebhooks()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Stop) // after the processes (cleanups run last-in first-out)
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
	proc, err := testenv.SpawnReady(ctx, bin, filepath.Join(t.TempDir(), "mgr-webhook.log"), probe, time.Minute,
		"--kubeconfig", kubeconfig, "--cert-mode=self-signed", "--namespace="+ns, "--cert-dir="+certDir,
		"--host=127.0.0.1", "--port="+strconv.Itoa(wo.LocalServingPort), "--cert-extra-sans=127.0.0.1",
		"--cert-lifetime=24s", "--ca-lifetime=45s", "--cert-settle=5s", "--cert-check-interval=1s", "--leader-elect",
		"--metrics-bind-address=0", "--namespaces=rook-ceph") // the overlay's Ceph namespace
	if err != nil {
		t.Fatal(err)
	}
	proc.StopAtCleanup(t, 10*time.Second)

	// A second replica: it serves what the Secret holds; the leader writes.
	port2, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	proc2, err := testenv.Spawn(bin, filepath.Join(t.TempDir(), "mgr-webhook-2.log"),
		"--kubeconfig", kubeconfig, "--cert-mode=self-signed", "--namespace="+ns, "--cert-dir="+t.TempDir(),
		"--host=127.0.0.1", "--port="+strconv.Itoa(port2), "--cert-extra-sans=127.0.0.1",
		"--cert-lifetime=24s", "--ca-lifetime=45s", "--cert-settle=5s", "--cert-check-interval=1s", "--leader-elect",
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--namespaces=rook-ceph")
	if err != nil {
		t.Fatal(err)
	}
	defer proc2.Stop(10 * time.Second)

	// The webhook put its own CA into the configurations.
	secret := &corev1.Secret{}
	await.For(t, 20*time.Second, "caBundle injected", func() bool {
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mgr-webhook-certs"}, secret) == nil &&
			bytes.Equal(mutatingBundle(t, k8s), secret.Data[certs.CACertKey]) && !bytes.Equal(secret.Data[certs.CACertKey], envtestCA)
	})

	// A load of admissions through the API server while certificates rotate:
	// until the serving certificate (12s) and the CA (40s) have rotated.
	serials, issuers, stopWatch := watchServedCerts(wo.LocalServingPort)
	l := load(t, k8s, root, "l")
	await.For(t, 2*time.Minute, "3 serving certificates from 2 CAs served under load", func() bool {
		return len(serials()) >= 3 && len(issuers()) >= 2
	})
	l.carried(t, 100, "the rotation")
	ok, failed := l.stop()
	stopWatch()
	s, is := serials(), issuers()
	t.Logf("%d admissions, %d failed; %d serving certificates and %d CAs seen", ok, failed, len(s), len(is))
	if failed != 0 {
		t.Errorf("%d of %d admissions failed during rotation; want 0", failed, ok+failed)
	}

	// Both replicas serve the certificate the Secret holds now.
	await.For(t, 10*time.Second, "both replicas serve the Secret's certificate", func() bool {
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
	await.For(t, 20*time.Second, "corrupt key regenerated", func() bool {
		s := &corev1.Secret{}
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mgr-webhook-certs"}, s) == nil && !bytes.Equal(s.Data[certs.TLSKeyKey], []byte("garbage"))
	})
	await.For(t, 20*time.Second, "CertificateRegenerated Event", func() bool {
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
	await.For(t, 20*time.Second, "caBundle restored", func() bool { return len(mutatingBundle(t, k8s)) > 0 })
	z, err := testenv.MinimalMgrObject(root, "rook-ceph", "z")
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, z); err != nil {
		t.Errorf("admission after the repairs: %v", err)
	}

	// Faults under load: the Secret deleted, its certificate corrupted, an
	// expired certificate put in. Each is repaired, and no admission fails.
	servesSecret := func() bool {
		cur := &corev1.Secret{}
		if k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mgr-webhook-certs"}, cur) != nil {
			return false
		}
		want := leafSerial(cur.Data[certs.TLSCertKey])
		return want != "" && servedSerial(wo.LocalServingPort) == want && servedSerial(port2) == want &&
			bytes.Contains(mutatingBundle(t, k8s), cur.Data[certs.CACertKey][:64])
	}
	faultLoad := load(t, k8s, root, "f")
	faults := []struct {
		name  string
		apply func(*corev1.Secret) error
	}{
		{"Secret deleted", func(s *corev1.Secret) error { return k8s.Delete(ctx, s) }},
		{"tls.crt corrupted", func(s *corev1.Secret) error {
			s.Data[certs.TLSCertKey] = []byte("-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n")
			return k8s.Update(ctx, s)
		}},
		{"an expired certificate", func(s *corev1.Secret) error {
			certPEM, keyPEM := expiredLeaf(t, s.Data[certs.CACertKey], s.Data[certs.CAKeyKey])
			s.Data[certs.TLSCertKey], s.Data[certs.TLSKeyKey] = certPEM, keyPEM
			return k8s.Update(ctx, s)
		}},
	}
	var repairs []string
	for _, f := range faults {
		// Each fault strikes while admissions are flowing on the last repair.
		faultLoad.carried(t, 25, "before "+f.name)
		cur := &corev1.Secret{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mgr-webhook-certs"}, cur); err != nil {
			t.Fatal(err)
		}
		before := leafSerial(cur.Data[certs.TLSCertKey])
		start := time.Now()
		if err := f.apply(cur); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		await.For(t, 30*time.Second, f.name+" repaired", func() bool {
			s := &corev1.Secret{}
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mgr-webhook-certs"}, s) == nil &&
				leafSerial(s.Data[certs.TLSCertKey]) != before && servesSecret()
		})
		repairs = append(repairs, fmt.Sprintf("%s: %s", f.name, time.Since(start).Round(100*time.Millisecond)))
	}
	faultLoad.carried(t, 25, "after the repairs")
	ok, failed = faultLoad.stop()
	t.Logf("faults under load: %d admissions, %d failed; repaired and served by both replicas in %s", ok, failed, strings.Join(repairs, ", "))
	if failed != 0 || ok < 50 {
		t.Errorf("%d of %d admissions failed during the certificate faults; want 0 of at least 50", failed, ok+failed)
	}
	if proc.Exited() || proc2.Exited() {
		t.Error("a mgr-webhook replica exited")
	}
}

// loadRun creates and deletes mgr Deployments through the API server from 4
// workers until stopped.
type loadRun struct {
	ok, failed atomic.Int64
	done       chan struct{}
	wg         sync.WaitGroup
}

func load(t *testing.T, k8s client.Client, root, prefix string) *loadRun {
	l := &loadRun{done: make(chan struct{})}
	for w := range 4 {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-l.done:
					return
				default:
				}
				id := fmt.Sprintf("%s%d-%d", prefix, w, i)
				m, err := testenv.MinimalMgrObject(root, "rook-ceph", id)
				if err != nil {
					t.Error(err)
					return
				}
				if err := k8s.Create(context.Background(), m); err != nil {
					l.failed.Add(1)
					t.Logf("admission failed: %v", err)
					continue
				}
				l.ok.Add(1)
				if err := k8s.Delete(context.Background(), m); err != nil {
					t.Logf("delete: %v", err)
				}
			}
		}()
	}
	return l
}

// carried waits until n more admissions have succeeded: the phase named by
// what has carried load, however fast the machine.
func (l *loadRun) carried(t *testing.T, n int64, what string) {
	t.Helper()
	from := l.ok.Load()
	await.For(t, time.Minute, fmt.Sprintf("%d admissions %s", n, what), func() bool { return l.ok.Load() >= from+n })
}

// stop ends the load and counts.
func (l *loadRun) stop() (ok, failed int64) {
	close(l.done)
	l.wg.Wait()
	return l.ok.Load(), l.failed.Load()
}

// expiredLeaf is a serving certificate for 127.0.0.1 signed by the Secret's
// CA that expired an hour ago.
func expiredLeaf(t *testing.T, caBundle, caKeyPEM []byte) ([]byte, []byte) {
	t.Helper()
	cb, _ := pem.Decode(caBundle)
	kb, _ := pem.Decode(caKeyPEM)
	if cb == nil || kb == nil {
		t.Fatal("the Secret holds no CA")
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	signer, ok := caKey.(crypto.Signer)
	if !ok {
		t.Fatalf("the Secret's CA key is a %T", caKey)
	}
	leaf, key, err := testenv.NewCert(ca, signer, &x509.Certificate{Subject: pkix.Name{CommonName: "expired"},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: time.Now().Add(-time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := testenv.KeyPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	return testenv.CertPEM(leaf), keyPEM
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

// watchServedCerts dials the webhook every 100ms and records the serial and
// issuer of the certificate it serves.
func watchServedCerts(port int) (serials, issuers func() map[string]bool, stop func()) {
	var mu sync.Mutex
	seenSerials, seenIssuers := map[string]bool{}, map[string]bool{}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads the served certificate
			if err == nil {
				leaf := conn.ConnectionState().PeerCertificates[0]
				mu.Lock()
				seenSerials[(*big.Int)(leaf.SerialNumber).String()] = true
				seenIssuers[leaf.Issuer.CommonName] = true
				mu.Unlock()
				conn.Close()
			}
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
	return snapshot(seenSerials), snapshot(seenIssuers), sync.OnceFunc(func() { close(done) })
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package clientauth runs the webhook requiring a client certificate, with a
// real API server configured to present one (its admission configuration's
// WebhookAdmissionConfiguration kubeConfigFile).
package clientauth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/webhook"
)

// TestOnlyTheAPIServerGetsIn: mgr-webhook --client-ca-file, as its
// ServiceAccount, behind a kube-apiserver whose admission configuration
// gives it a client certificate of that CA. A mgr created through the API
// server is completed (the API server got in); a caller on the network with
// no certificate, or with one of another CA, is refused at the TLS
// handshake, before any byte of a request is read; one with the API
// server's certificate is answered.
func TestOnlyTheAPIServerGetsIn(t *testing.T) {
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	caPEM, certPEM, keyPEM := issueClientCert(t)
	_, otherCert, otherKey := issueClientCert(t)
	caFile := filepath.Join(dir, "client-ca.crt")
	kubeconfig := filepath.Join(dir, "webhook-client.kubeconfig")
	admission := filepath.Join(dir, "admission.yaml")
	write(t, caFile, caPEM)
	// "*": the credentials for every webhook the API server calls.
	write(t, kubeconfig, fmt.Appendf(nil, "apiVersion: v1\nkind: Config\nusers:\n- name: '*'\n  user:\n    client-certificate-data: %s\n    client-key-data: %s\n",
		base64.StdEncoding.EncodeToString(certPEM), base64.StdEncoding.EncodeToString(keyPEM)))
	var plugins bytes.Buffer
	plugins.WriteString("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n")
	for _, p := range []string{"ValidatingAdmissionWebhook", "MutatingAdmissionWebhook"} {
		fmt.Fprintf(&plugins, "- name: %s\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: %s\n", p, kubeconfig)
	}
	write(t, admission, plugins.Bytes())

	binDir := testenv.BuildForTest(t, "mgr-webhook")
	api, err := testenv.StartAPIServerWith(testenv.APIServerOptions{ShippedWebhooks: true, Args: map[string]string{"admission-control-config-file": admission}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Stop)
	cc := testenv.CephCluster{Namespace: "rook-ceph", FSID: "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b", MonHost: "[v2:10.0.0.1:3300]", Members: "a",
		AdminKeyring: "[client.admin]\n\tkey = not-a-real-key\n"}
	if err := cc.Create(ctx, api.Client); err != nil {
		t.Fatal(err)
	}
	testenv.SpawnWebhook(t, api, binDir, "--client-ca-file="+caFile)
	wo := api.Env.WebhookInstallOptions

	in := &appsv1.Deployment{}
	data, err := os.ReadFile(filepath.Join(root, "manifests", "examples", "minimal-mgr.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, in); err != nil {
		t.Fatal(err)
	}
	got := in.DeepCopy()
	if err := api.Client.Create(ctx, got); err != nil {
		t.Fatalf("a mgr created through the API server: %v (its client certificate did not get it in?)", err)
	}
	if equality.Semantic.DeepEqual(in.Spec.Template.Spec, got.Spec.Template.Spec) {
		t.Error("the mgr was admitted unchanged: the mutating webhook was not called")
	}

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(wo.LocalServingPort))
	post := func(cert []tls.Certificate) (*http.Response, error) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: cert}, //nolint:gosec // the caller does not check whom it talks to
		}}
		return c.Post("https://"+addr+webhook.ValidatePath, "application/json", bytes.NewReader([]byte(`{}`)))
	}
	for name, cert := range map[string][]tls.Certificate{"no certificate": nil, "another CA's certificate": pair(t, otherCert, otherKey)} {
		if resp, err := post(cert); err == nil {
			resp.Body.Close()
			t.Errorf("a caller with %s was answered %s; want the handshake refused", name, resp.Status)
		}
	}
	resp, err := post(pair(t, certPEM, keyPEM))
	if err != nil {
		t.Fatalf("a caller with the API server's certificate: %v", err)
	}
	resp.Body.Close()
}

// issueClientCert makes a CA and a client certificate it signed.
func issueClientCert(t *testing.T) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "webhook-client-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver-webhook-client"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func pair(t *testing.T, certPEM, keyPEM []byte) []tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return []tls.Certificate{c}
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package certmanager tests the cert-manager overlay end to end: the
// overlay's Issuers and Certificates and its webhook configurations (with
// their inject-ca-from annotations) on a real kube-apiserver, cert-manager's
// own cainjector (its reconcilers, from the cert-manager module, run in this
// process) filling in the caBundle, and the real mgr-webhook binary serving
// the Certificate's Secret: the injected caBundle must verify the certificate
// the webhook serves, through the API server and in a direct handshake.
//
// cert-manager's controller binary is not in the Go module proxy, so the
// test issues the two Certificates itself as its SelfSigned and CA issuers
// do, with cert-manager's pki package, from each Certificate's spec, into the
// Secret shape cert-manager writes (tls.crt, tls.key, ca.crt, the
// certificate-name annotation).
package certmanager

import (
	"bytes"
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	"github.com/cert-manager/cert-manager/pkg/util/pki"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/test/internal/await"
)

const (
	ns = "mgr-webhook-system"
	// serviceName is the name the API server checks the served certificate
	// against when it calls the webhook through its Service.
	serviceName = "mgr-webhook.mgr-webhook-system.svc"
)

func TestInjectedCABundleVerifiesTheServedCertificate(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	binDir := testenv.BuildForTest(t, "mgr-webhook")
	crds, err := testenv.CertManagerCRDs()
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(root, "manifests", "overlays", "cert-manager")
	rendered, err := testenv.Kustomize(overlay)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(rendered)
	// envtest installs the overlay's webhook configurations pointing at a
	// local port, with a caBundle of its own CA; the annotations stay.
	api, err := testenv.StartAPIServerWith(testenv.APIServerOptions{WebhookManifests: []string{rendered}, CRDs: []string{crds}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Stop) // after the processes (cleanups run last-in first-out)
	k8s := api.Client
	if err := cmapi.AddToScheme(api.Scheme); err != nil {
		t.Fatal(err)
	}
	if k8s, err = client.New(api.Config, client.Options{Scheme: api.Scheme}); err != nil {
		t.Fatal(err)
	}
	envtestCA := bundles(t, k8s)[0]
	for _, want := range []string{"mutating", "validating"} {
		if !strings.Contains(string(annotationsOf(t, k8s)), want+"=mgr-webhook-system/mgr-webhook-serving") {
			t.Fatalf("the %s configuration lacks inject-ca-from=%s/mgr-webhook-serving: %s", want, ns, annotationsOf(t, k8s))
		}
	}

	// The overlay's namespace, RBAC, Issuers and Certificates, applied for real.
	if _, err := testenv.ApplyRBAC(ctx, k8s, overlay); err != nil {
		t.Fatal(err)
	}
	if n, err := testenv.CreateKinds(ctx, k8s, overlay, "Issuer", "Certificate"); err != nil || n != 4 {
		t.Fatalf("Issuers and Certificates of the overlay: %d created, %v; want 4", n, err)
	}
	caCrt := certificate(t, k8s, "mgr-webhook-ca")
	caSecret, caCert, caKey := issue(t, caCrt, nil, nil)
	create(t, k8s, caSecret)
	serving := certificate(t, k8s, "mgr-webhook-serving")
	// The API server calls this test's webhook at 127.0.0.1, not through a Service.
	serving.Spec.IPAddresses = append(serving.Spec.IPAddresses, "127.0.0.1")
	if err := k8s.Update(ctx, serving); err != nil {
		t.Fatal(err)
	}
	servingSecret, _, _ := issue(t, serving, caCert, caKey)
	create(t, k8s, servingSecret)

	// mgr-webhook as the overlay's Deployment runs it: --cert-mode=files on
	// the mounted Secret, as its ServiceAccount.
	certDir := t.TempDir()
	mount(t, certDir, servingSecret)
	kubeconfig, err := api.KubeconfigAs(testenv.ServiceAccountUser(ns, "mgr-webhook"))
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(kubeconfig)
	wo := api.Env.WebhookInstallOptions
	probe, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	proc, err := testenv.SpawnReady(ctx, filepath.Join(binDir, "mgr-webhook"), filepath.Join(t.TempDir(), "mgr-webhook.log"), probe, time.Minute,
		"--kubeconfig", kubeconfig, "--cert-dir", certDir, "--host=127.0.0.1", "--port="+strconv.Itoa(wo.LocalServingPort),
		"--metrics-bind-address=0", "--shutdown-delay=0s", "--namespaces=rook-ceph") // the overlay's Ceph namespace
	if err != nil {
		t.Fatal(err)
	}
	proc.StopAtCleanup(t, 10*time.Second)
	cluster := testenv.CephCluster{Namespace: "rook-ceph", FSID: "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b", MonHost: "v2:10.0.0.1:3300", Members: "a", AdminKeyring: "[client.admin]\n"}
	if err := cluster.Create(ctx, k8s); err != nil {
		t.Fatal(err)
	}

	// Control: with envtest's CA still in place, the API server refuses the
	// served certificate, so the admissions below prove the injection.
	a, err := testenv.MinimalMgrObject(root, "rook-ceph", "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, a); err == nil || !strings.Contains(err.Error(), "x509") {
		t.Fatalf("a mgr created before the injection: %v; want the webhook call to fail certificate verification", err)
	}

	// cert-manager's cainjector, as its Deployment runs it for webhooks.
	// Its field manager comes from the user agent, as cert-manager's binary
	// sets it; its errors go to the test's log (internal/harness/testenv).
	cfg := rest.CopyConfig(api.Config)
	cfg.UserAgent = "cert-manager-cainjector/v1.21.2"
	injector, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: api.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cainjector.RegisterAllInjectors(ctx, injector, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName: true, cainjector.ValidatingWebhookConfigurationName: true,
		},
	}); err != nil {
		t.Fatal(err)
	}
	injectorDone := make(chan error, 1)
	go func() { injectorDone <- injector.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-injectorDone; err != nil {
			t.Errorf("cainjector: %v", err)
		}
	}()
	started := time.Now()
	// cainjector merges (feature CAInjectorMerging, on by default): the
	// bundle keeps what it held and gains the CA, so a CA rotation never
	// leaves a moment where the old one is not trusted.
	await.For(t, 30*time.Second, "the CA injected into both configurations", func() bool {
		for _, b := range bundles(t, k8s) {
			if !bytes.Contains(b, servingSecret.Data[cmmeta.TLSCAKey]) {
				return false
			}
		}
		return true
	})
	t.Logf("cainjector put the CA into both caBundles %s after it started", time.Since(started).Round(100*time.Millisecond))
	if bytes.Contains(envtestCA, servingSecret.Data[cmmeta.TLSCAKey]) {
		t.Fatal("envtest's bundle already held the CA: the control above proves nothing")
	}

	// The injected bundle verifies what the webhook serves, under the
	// Service's name, as the API server would check it in a cluster.
	verify := func(what string) *x509.Certificate {
		t.Helper()
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(bundles(t, k8s)[0]) {
			t.Fatalf("%s: the injected caBundle holds no certificate", what)
		}
		conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(wo.LocalServingPort)), &tls.Config{RootCAs: pool, ServerName: serviceName})
		if err != nil {
			t.Fatalf("%s: the injected caBundle does not verify the served certificate for %s: %v", what, serviceName, err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0]
	}
	if served := verify("issued"); !bytes.Equal(pemOf(served), servingSecret.Data[corev1.TLSCertKey]) {
		t.Error("the webhook serves another certificate than the Secret's")
	}
	admit(t, k8s, root, "a")

	// Renewal (rotationPolicy: Always: a new key): the Secret changes, the
	// kubelet updates the mounted files, the webhook serves the new
	// certificate, and the CA, hence the caBundle, stays.
	renewed, _, _ := issue(t, serving, caCert, caKey)
	current := &corev1.Secret{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(servingSecret), current); err != nil {
		t.Fatal(err)
	}
	current.Data = renewed.Data
	if err := k8s.Update(ctx, current); err != nil {
		t.Fatal(err)
	}
	mount(t, certDir, renewed)
	mounted := time.Now()
	await.For(t, 30*time.Second, "the renewed certificate served", func() bool {
		return bytes.Equal(pemOf(verify("renewed")), renewed.Data[corev1.TLSCertKey])
	})
	t.Logf("the renewed certificate served %s after the files changed", time.Since(mounted).Round(100*time.Millisecond))
	admit(t, k8s, root, "b")
	for _, b := range bundles(t, k8s) {
		if !bytes.Contains(b, caSecret.Data[corev1.TLSCertKey]) {
			t.Error("the caBundle lost the CA with the serving certificate's renewal")
		}
	}
}

// issue signs crt's spec as cert-manager's issuers do: self-signed when
// signer is nil (the SelfSigned issuer; ca.crt is the certificate itself),
// else by the CA (the CA issuer; ca.crt is the CA). It returns the Secret
// cert-manager would write, and the certificate and key.
func issue(t *testing.T, crt *cmapi.Certificate, signer *x509.Certificate, signerKey crypto.Signer) (*corev1.Secret, *x509.Certificate, crypto.Signer) {
	t.Helper()
	key, err := pki.GeneratePrivateKeyForCertificate(crt)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := pki.CertificateTemplateFromCertificate(crt)
	if err != nil {
		t.Fatal(err)
	}
	if signer == nil {
		signer, signerKey = tmpl, key
	}
	certPEM, cert, err := pki.SignCertificate(tmpl, signer, key.Public(), signerKey)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := pki.EncodePrivateKey(key, crt.Spec.PrivateKey.Encoding)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := certPEM
	if signer != tmpl {
		caPEM = pemOf(signer)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: crt.Spec.SecretName, Namespace: crt.Namespace, Annotations: map[string]string{
			cmapi.CertificateNameKey: crt.Name, cmapi.IssuerNameAnnotationKey: crt.Spec.IssuerRef.Name, cmapi.IssuerKindAnnotationKey: crt.Spec.IssuerRef.Kind,
		}},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, cmmeta.TLSCAKey: caPEM},
	}, cert, key
}

// mount writes the Secret's files into dir as the kubelet does: each file
// replaced whole, by rename.
func mount(t *testing.T, dir string, s *corev1.Secret) {
	t.Helper()
	for name, data := range s.Data {
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func certificate(t *testing.T, k8s client.Client, name string) *cmapi.Certificate {
	t.Helper()
	c := &cmapi.Certificate{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

func create(t *testing.T, k8s client.Client, o client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), o); err != nil {
		t.Fatal(err)
	}
}

// configs are the two webhook configurations named mgr-webhook.
func configs(t *testing.T, k8s client.Client) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: "mgr-webhook"}, m); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: "mgr-webhook"}, v); err != nil {
		t.Fatal(err)
	}
	return m, v
}

// bundles are the caBundles of the mutating, then the validating configuration's webhooks.
func bundles(t *testing.T, k8s client.Client) [][]byte {
	t.Helper()
	m, v := configs(t, k8s)
	var out [][]byte
	for _, w := range m.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	for _, w := range v.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

// annotationsOf lists "mutating=<inject-ca-from>" and "validating=<...>".
func annotationsOf(t *testing.T, k8s client.Client) []byte {
	t.Helper()
	m, v := configs(t, k8s)
	return fmt.Appendf(nil, "mutating=%s validating=%s", m.Annotations[cmapi.WantInjectAnnotation], v.Annotations[cmapi.WantInjectAnnotation])
}

// admit creates a minimal mgr through the API server, which calls both
// webhooks over TLS verified by the injected caBundle, and checks that it
// was completed.
func admit(t *testing.T, k8s client.Client, root, id string) {
	t.Helper()
	d, err := testenv.MinimalMgrObject(root, "rook-ceph", id)
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(context.Background(), d); err != nil {
		t.Fatalf("mgr %s through the API server: %v", id, err)
	}
	if len(d.Spec.Template.Spec.InitContainers) == 0 || d.Spec.Template.Labels[contract.LabelMgrID] != id {
		t.Errorf("mgr %s stored without its completion: %d init containers, template labels %v", id, len(d.Spec.Template.Spec.InitContainers), d.Spec.Template.Labels)
	}
}

func pemOf(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// kubernetesServiceIP is the cluster IP of Service default/kubernetes in
// envtest's service range (10.0.0.0/24): the address every in-cluster client
// dials, so the serving certificate must name it.
const kubernetesServiceIP = "10.0.0.1"

// realNodeCerts prepares an API server that pods on a real kubelet can use
// and that can reach their kubelet: it serves at the host's address with a
// certificate that also names the kubernetes Service's cluster IP (envtest's
// names only localhost and its listen address), and presents a client
// certificate to kubelets (kubectl exec, logs). envtest keeps certificates it
// finds in CertDir, so they are written there before it starts.
func realNodeCerts(env *envtest.Environment) (dir string, err error) {
	host, err := HostIP()
	if err != nil {
		return "", err
	}
	dir, err = os.MkdirTemp("", "mgr-webhook-apiserver-certs-")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	ca, caKey, err := NewCert(nil, nil, &x509.Certificate{Subject: pkix.Name{CommonName: "mgr-webhook real-node CA"},
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature})
	if err != nil {
		return "", err
	}
	serving, servingKey, err := NewCert(ca, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(host), net.ParseIP(kubernetesServiceIP)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return "", err
	}
	kubeletClient, kubeletClientKey, err := NewCert(ca, caKey, &x509.Certificate{
		Subject:  pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return "", err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return "", err
	}
	files := map[string][]byte{
		"apiserver.crt":      CertPEM(serving),
		"kubelet-client.crt": CertPEM(kubeletClient),
		KubeletClientCAFile:  CertPEM(ca),
		"sa-signer.crt":      pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
	}
	for name, k := range map[string]crypto.Signer{"apiserver.key": servingKey, "kubelet-client.key": kubeletClientKey, "sa-signer.key": saKey} {
		if files[name], err = KeyPEM(k); err != nil {
			return "", err
		}
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return "", err
		}
	}
	s := env.ControlPlane.GetAPIServer()
	s.CertDir = dir
	// envtest picks a loopback address unless given both address and port.
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	s.SecureServing.Address, s.SecureServing.Port = host, strconv.Itoa(port)
	s.SecureServing.CA = CertPEM(ca)
	for k, v := range map[string]string{
		"advertise-address":               host,
		"kubelet-client-certificate":      filepath.Join(dir, "kubelet-client.crt"),
		"kubelet-client-key":              filepath.Join(dir, "kubelet-client.key"),
		"kubelet-preferred-address-types": "InternalIP",
		// envtest turns it off (no token controller); a kubelet needs the
		// projected token volume it adds to every pod.
		"disable-admission-plugins": "",
	} {
		s.Configure().Set(k, v)
	}
	return dir, nil
}

// KubeletClientCAFile (in APIServer.CertDir) is the CA of the client
// certificate the API server presents to kubelets: a real node's kubelet
// trusts it (hack/node.sh, KUBELET_CLIENT_CA).
const KubeletClientCAFile = "ca.crt"

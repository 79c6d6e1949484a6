// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"

	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

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
	ca, caKey, err := newCert(nil, nil, &x509.Certificate{Subject: pkix.Name{CommonName: "mgr-webhook real-node CA"},
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature})
	if err != nil {
		return "", err
	}
	serving, servingKey, err := newCert(ca, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(host), net.ParseIP(kubernetesServiceIP)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return "", err
	}
	kubeletClient, kubeletClientKey, err := newCert(ca, caKey, &x509.Certificate{
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
		"apiserver.crt":      pemBlock("CERTIFICATE", serving.Raw),
		"apiserver.key":      mustECKey(servingKey),
		"kubelet-client.crt": pemBlock("CERTIFICATE", kubeletClient.Raw),
		"kubelet-client.key": mustECKey(kubeletClientKey),
		KubeletClientCAFile:  pemBlock("CERTIFICATE", ca.Raw),
		"sa-signer.crt":      pemBlock("PUBLIC KEY", saPub),
		"sa-signer.key":      mustECKey(saKey),
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
	s.SecureServing.CA = pemBlock("CERTIFICATE", ca.Raw)
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

// newCert makes a certificate of tmpl with a new P-256 key, signed by parent
// (self-signed when parent is nil).
func newCert(parent *x509.Certificate, parentKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func mustECKey(k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		panic(err) // only for keys of unknown curves; P-256 always marshals
	}
	return pemBlock("EC PRIVATE KEY", der)
}

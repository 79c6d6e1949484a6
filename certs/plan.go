// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package certs gives the webhook its serving certificate without any other
// component: a self-signed CA and a serving certificate kept in a Secret,
// renewed well before expiry, served by every replica without a restart
// (files in --cert-dir, reloaded by controller-runtime's certwatcher), and the
// CA bundle kept in the webhook configurations.
package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"time"
)

// Keys of the certificate Secret.
const (
	CACertKey  = "ca.crt" // PEM bundle: the current CA first, then older CAs still valid
	CAKeyKey   = "ca.key"
	TLSCertKey = "tls.crt"
	TLSKeyKey  = "tls.key"
)

// Lifetimes say how long certificates live; each is renewed once less than a
// third of its life remains. Settle is how long the API server is given to
// act on a caBundle change: a new CA signs only once it has been in every
// webhook's bundle that long, and the bundles drop a CA only once the serving
// certificate that replaced its own has been out that long (the API server
// applies a changed caBundle when its informer sees it, the replicas load a
// new certificate when theirs does; neither says when).
type Lifetimes struct {
	CA, Serving, Settle time.Duration
}

// DefaultLifetimes: a 10-year CA, 90-day serving certificates, 10 s to settle.
var DefaultLifetimes = Lifetimes{CA: 10 * 365 * 24 * time.Hour, Serving: 90 * 24 * time.Hour, Settle: 10 * time.Second}

// backdate is how far before its issue a certificate is valid (clock skew);
// a certificate was made at NotBefore+backdate.
const backdate = time.Minute

// Trust is the caBundle of every installed webhook: what the API server
// verifies the replicas' certificate with.
type Trust [][]byte

// carried reports whether any webhook carries a bundle. With none there is
// nothing the replicas must keep verifying against (a first install).
func (t Trust) carried() bool {
	return slices.ContainsFunc(t, func(b []byte) bool { return len(b) > 0 })
}

// holds reports whether every webhook that carries a bundle holds ca.
func (t Trust) holds(ca *x509.Certificate) bool {
	for _, b := range t {
		if len(b) > 0 && !bundleHolds(b, ca.Raw) {
			return false
		}
	}
	return true
}

// Hosts are the names the serving certificate must cover.
type Hosts struct {
	DNSNames []string
	IPs      []net.IP
}

// ServiceHosts are the DNS names of a Service.
func ServiceHosts(service, namespace string, extra ...string) Hosts {
	h := Hosts{DNSNames: []string{service, service + "." + namespace, service + "." + namespace + ".svc", service + "." + namespace + ".svc.cluster.local"}}
	for _, e := range extra {
		if ip := net.ParseIP(e); ip != nil {
			h.IPs = append(h.IPs, ip)
		} else if e != "" {
			h.DNSNames = append(h.DNSNames, e)
		}
	}
	return h
}

// Reason is one change Plan made and why.
type Reason struct {
	Message string
	// Repair is true when the Secret held something broken (unparsable, a key
	// that does not match, a certificate from an unknown CA), not merely
	// something old or missing: the rotator warns about those.
	Repair bool
}

// Reasons are all the changes of one plan.
type Reasons []Reason

// Repair reports whether any change repaired broken data.
func (rs Reasons) Repair() bool {
	return slices.ContainsFunc(rs, func(r Reason) bool { return r.Repair })
}

// String joins the messages, for logs and Events.
func (rs Reasons) String() string {
	msgs := make([]string, len(rs))
	for i, r := range rs {
		msgs[i] = r.Message
	}
	return strings.Join(msgs, "; ")
}

// errMissing is parseCA's answer for no CA at all: a first install, not a repair.
var errMissing = errors.New("missing")

// Plan decides what the Secret's data must become at now, given the bundles
// the webhooks carry. A serving certificate is signed by the newest CA that
// can sign it (canSign): one the API server has trusted for life.Settle, so
// that no request meets a certificate it cannot verify yet. It returns the new
// data and why it changed (nil reasons: keep as is).
func Plan(now time.Time, data map[string][]byte, hosts Hosts, life Lifetimes, trust Trust) (map[string][]byte, Reasons, error) {
	out := map[string][]byte{}
	for k, v := range data {
		out[k] = v
	}
	var reasons Reasons

	cas, caKey, caErr := parseCA(out[CACertKey], out[CAKeyKey])
	// The signing keys of the bundle: only the current CA's is stored.
	keys := map[*x509.Certificate]crypto.Signer{}
	if caErr == nil {
		keys[cas[0]] = caKey
	}
	if caErr != nil || needsRenewal(cas[0], now, life.CA) {
		if caErr != nil {
			reasons = append(reasons, Reason{Message: "CA " + caErr.Error() + ": new CA", Repair: !errors.Is(caErr, errMissing)})
			// Nothing verifiable is left in the Secret; the replicas go on
			// serving their certificate, which the webhooks' bundles verify,
			// until the new CA has settled there.
			cas = nil
		} else {
			reasons = append(reasons, Reason{Message: fmt.Sprintf("CA expires %s: new CA, the old one stays in the bundle", cas[0].NotAfter.UTC().Format(time.RFC3339))})
		}
		ca, key, err := newCA(now, life.CA)
		if err != nil {
			return nil, nil, err
		}
		cas, caKey = append([]*x509.Certificate{ca}, cas...), key
		keys[ca] = key
	}
	// Expired CAs leave the bundle.
	cas = append(cas[:1], slices.DeleteFunc(cas[1:], func(c *x509.Certificate) bool { return !now.Before(c.NotAfter) })...)
	if err := encodeCAs(cas, caKey, out); err != nil {
		return nil, nil, err
	}

	canSign := func(ca *x509.Certificate) bool {
		if keys[ca] == nil || ca.NotAfter.Sub(now) <= life.Serving/3 {
			return false // no key, or what it signs would need renewal at once
		}
		return !trust.carried() || trust.holds(ca) && !now.Before(ca.NotBefore.Add(backdate+life.Settle))
	}
	// The newest CA that can sign: the current one, or in the check that
	// renews the CA, the previous one while the new one settles.
	var signer *x509.Certificate
	for _, c := range cas {
		if canSign(c) {
			signer = c
			break
		}
	}
	why, byOlderCA, broken := leafProblem(out[TLSCertKey], out[TLSKeyKey], cas, hosts, now, life.Serving)
	switch {
	case why == "" || byOlderCA && signer != cas[0]:
		// Fine, or signed by a previous CA, kept until the new one has
		// settled in the webhooks' bundles.
	case signer == nil:
		reasons = append(reasons, Reason{Message: "serving certificate " + why + ": a new one once the webhooks have trusted the new CA for " + life.Settle.String(), Repair: broken})
	default:
		certPEM, keyPEM, err := newServing(now, life.Serving, hosts, signer, keys[signer])
		if err != nil {
			return nil, nil, err
		}
		out[TLSCertKey], out[TLSKeyKey] = certPEM, keyPEM
		reasons = append(reasons, Reason{Message: "serving certificate " + why + ": new serving certificate", Repair: broken})
	}
	changed := false
	for _, k := range []string{CACertKey, CAKeyKey, TLSCertKey, TLSKeyKey} {
		changed = changed || !bytes.Equal(out[k], data[k])
	}
	if !changed {
		return data, nil, nil
	}
	if len(reasons) == 0 {
		reasons = append(reasons, Reason{Message: "expired CA dropped from the bundle"})
	}
	return out, reasons, nil
}

// Settled reports whether the webhooks' bundles may become the Secret's CA
// bundle, dropping any CA it lacks: the Secret's serving certificate is
// signed by its current CA and has been out for life.Settle, so the replicas
// serve it.
func Settled(now time.Time, data map[string][]byte, life Lifetimes) bool {
	cas, _, err := parseCA(data[CACertKey], data[CAKeyKey])
	if err != nil {
		return false
	}
	leaf, err := tlsPair(data[TLSCertKey], data[TLSKeyKey])
	return err == nil && leaf.CheckSignatureFrom(cas[0]) == nil && !now.Before(leaf.NotBefore.Add(backdate+life.Settle))
}

// needsRenewal: less than a third of the configured lifetime remains (the
// configured one, not NotAfter-NotBefore: NotBefore is backdated for skew).
func needsRenewal(c *x509.Certificate, now time.Time, life time.Duration) bool {
	return c.NotAfter.Sub(now) < life/3
}

// leafProblem says what is wrong with the serving certificate ("" if
// nothing), and whether it is only that an older CA of the bundle signed it.
func leafProblem(certPEM, keyPEM []byte, cas []*x509.Certificate, hosts Hosts, now time.Time, life time.Duration) (why string, byOlderCA, broken bool) {
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return "missing", false, false
	}
	leaf, err := tlsPair(certPEM, keyPEM)
	if err != nil {
		return "unusable (" + err.Error() + ")", false, true
	}
	if needsRenewal(leaf, now, life) {
		return "expires " + leaf.NotAfter.UTC().Format(time.RFC3339), false, false
	}
	for _, n := range hosts.DNSNames {
		if !slices.Contains(leaf.DNSNames, n) {
			return "lacks the name " + n, false, false
		}
	}
	for _, ip := range hosts.IPs {
		if !slices.ContainsFunc(leaf.IPAddresses, ip.Equal) {
			return "lacks the address " + ip.String(), false, false
		}
	}
	if leaf.CheckSignatureFrom(cas[0]) == nil {
		return "", false, false
	}
	for _, older := range cas[1:] {
		if leaf.CheckSignatureFrom(older) == nil {
			return "signed by the previous CA", true, false
		}
	}
	return "signed by an unknown CA", false, true
}

// tlsPair parses a certificate and checks that the key matches it.
func tlsPair(certPEM, keyPEM []byte) (*x509.Certificate, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, err
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	if !keyMatches(key, cert) {
		return nil, errors.New("key does not match certificate")
	}
	return cert, nil
}

func parseCA(bundle, keyPEM []byte) ([]*x509.Certificate, crypto.Signer, error) {
	if len(bundle) == 0 || len(keyPEM) == 0 {
		return nil, nil, errMissing
	}
	var cas []*x509.Certificate
	for rest := bundle; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, nil, errors.New("unparsable")
		}
		cas = append(cas, c)
	}
	if len(cas) == 0 || !cas[0].IsCA {
		return nil, nil, errors.New("unparsable")
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, nil, err
	}
	if !keyMatches(key, cas[0]) {
		return nil, nil, errors.New("key does not match")
	}
	return cas, key, nil
}

// keyMatches reports whether key is the private key of cert.
func keyMatches(key crypto.Signer, cert *x509.Certificate) bool {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(cert.PublicKey)
}

func parseCert(p []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(p)
	if b == nil {
		return nil, errors.New("not PEM")
	}
	return x509.ParseCertificate(b.Bytes)
}

func parseKey(p []byte) (crypto.Signer, error) {
	b, _ := pem.Decode(p)
	if b == nil {
		return nil, errors.New("key not PEM")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, errors.New("key unparsable")
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("key cannot sign")
	}
	return s, nil
}

func encodeCAs(cas []*x509.Certificate, key crypto.Signer, out map[string][]byte) error {
	var bundle bytes.Buffer
	for _, c := range cas {
		_ = pem.Encode(&bundle, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return err
	}
	out[CACertKey], out[CAKeyKey] = bundle.Bytes(), keyPEM
	return nil
}

func encodeKey(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// newKeyAndSerial makes what every certificate here starts from: a P-256 key
// and a random 127-bit serial.
func newKeyAndSerial() (*ecdsa.PrivateKey, *big.Int, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return key, sn, err
}

func newCA(now time.Time, life time.Duration) (*x509.Certificate, crypto.Signer, error) {
	key, sn, err := newKeyAndSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("mgr-webhook-ca-%d", now.Unix())},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(life),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	ca, err := x509.ParseCertificate(der)
	return ca, key, err
}

// newServing issues a serving certificate that never outlives its CA.
func newServing(now time.Time, life time.Duration, hosts Hosts, ca *x509.Certificate, caKey crypto.Signer) ([]byte, []byte, error) {
	key, sn, err := newKeyAndSerial()
	if err != nil {
		return nil, nil, err
	}
	notAfter := now.Add(life)
	if notAfter.After(ca.NotAfter) {
		notAfter = ca.NotAfter
	}
	cn := "mgr-webhook"
	if len(hosts.DNSNames) > 0 {
		cn = hosts.DNSNames[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     hosts.DNSNames,
		IPAddresses:  hosts.IPs,
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// trusts reports whether caBundle (a webhook configuration's) contains the
// current CA of the Secret data.
func trusts(caBundle []byte, data map[string][]byte) bool {
	b, _ := pem.Decode(data[CACertKey])
	return b != nil && bundleHolds(caBundle, b.Bytes)
}

// bundleHolds reports whether the PEM bundle holds the certificate of DER der.
func bundleHolds(bundle, der []byte) bool {
	for rest := bundle; ; {
		var c *pem.Block
		c, rest = pem.Decode(rest)
		if c == nil {
			return false
		}
		if bytes.Equal(c.Bytes, der) {
			return true
		}
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package certs

import (
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// The rules with a threshold or an emptiness test, each on both sides.

func TestNeedsRenewalAtAThird(t *testing.T) {
	now := time.Now()
	for name, tc := range map[string]struct {
		left time.Duration
		want bool
	}{
		"a third left, to the nanosecond": {testLife.Serving / 3, false},
		"a nanosecond less":               {testLife.Serving/3 - 1, true},
		"a nanosecond more":               {testLife.Serving/3 + 1, false},
	} {
		if got := needsRenewal(&x509.Certificate{NotAfter: now.Add(tc.left)}, now, testLife.Serving); got != tc.want {
			t.Errorf("%s: needsRenewal = %v, want %v", name, got, tc.want)
		}
	}
}

// TestCASignsOnlyWithMoreThanAThirdLeft: a CA whose remaining life is a
// third of the serving lifetime, or less, signs nothing (what it signed would
// need renewal at once); with a second more it signs. The webhooks trust only
// that CA, so no newer one may sign in its place.
func TestCASignsOnlyWithMoreThanAThirdLeft(t *testing.T) {
	data, _ := mustPlan(t, time.Now(), nil, nil)
	ca := caOf(t, data)
	for name, tc := range map[string]struct {
		left  time.Duration
		signs bool
	}{
		"a third left":  {testLife.Serving / 3, false},
		"a second more": {testLife.Serving/3 + time.Second, true},
	} {
		now := ca.NotAfter.Add(-tc.left)
		// No serving certificate: the plan must sign one if a CA can.
		caOnly := map[string][]byte{CACertKey: data[CACertKey], CAKeyKey: data[CAKeyKey]}
		out, _, err := Plan(now, caOnly, testHosts, testLife, carrying(data[CACertKey]))
		if err != nil {
			t.Fatal(err)
		}
		signed := false
		if len(out[TLSCertKey]) > 0 {
			leaf, err := parseCert(out[TLSCertKey])
			if err != nil {
				t.Fatal(err)
			}
			signed = leaf.CheckSignatureFrom(ca) == nil
		}
		if signed != tc.signs {
			t.Errorf("%s: signed by the CA %v, want %v", name, signed, tc.signs)
		}
	}
}

// caOf is the current CA of a plan's data.
func caOf(t *testing.T, data map[string][]byte) *x509.Certificate {
	t.Helper()
	cas, _, err := parseCA(data[CACertKey], data[CAKeyKey])
	if err != nil {
		t.Fatal(err)
	}
	return cas[0]
}

func TestTrustHoldsOnlyWhatEveryCarrierHolds(t *testing.T) {
	data, _ := mustPlan(t, time.Now(), nil, nil)
	other, _ := mustPlan(t, time.Now(), nil, nil)
	ca := caOf(t, data)
	for name, tc := range map[string]struct {
		trust Trust
		want  bool
	}{
		"every webhook holds it":               {Trust{data[CACertKey], data[CACertKey]}, true},
		"one without a bundle, one holding it": {Trust{nil, data[CACertKey]}, true},
		"one holding it, one holding another":  {Trust{data[CACertKey], other[CACertKey]}, false},
		"only another":                         {Trust{other[CACertKey]}, false},
		"no bundle at all (a first install)":   {Trust{nil, nil}, true},
	} {
		if got := tc.trust.holds(ca); got != tc.want {
			t.Errorf("%s: holds = %v, want %v", name, got, tc.want)
		}
	}
}

// TestFirstInstallSignsAtOnce: webhooks that carry no bundle yet (a first
// install) wait for nothing: the first CA signs the first certificate in the
// same check, where a CA the webhooks must first carry settles before it signs.
func TestFirstInstallSignsAtOnce(t *testing.T) {
	out, _, err := Plan(time.Now(), nil, testHosts, testLife, Trust{nil, nil})
	if err != nil {
		t.Fatal(err)
	}
	if len(out[TLSCertKey]) == 0 {
		t.Error("no serving certificate on a first install")
	}
}

func TestServingCommonName(t *testing.T) {
	ca, key, err := newCA(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		hosts Hosts
		cn    string
	}{
		"the first DNS name": {Hosts{DNSNames: []string{"a.svc", "b.svc"}}, "a.svc"},
		"addresses only":     {Hosts{IPs: []net.IP{net.ParseIP("127.0.0.1")}}, "mgr-webhook"},
	} {
		c, _, err := newServing(time.Now(), time.Hour, tc.hosts, ca, key)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		leaf, err := parseCert(c)
		if err != nil {
			t.Fatal(err)
		}
		if leaf.Subject.CommonName != tc.cn {
			t.Errorf("%s: CN %q, want %q", name, leaf.Subject.CommonName, tc.cn)
		}
	}
}

// TestSyncerTellsNoCertificateYetFromABrokenOne: only a Secret without
// either half waits quietly (errNoCertificate); a half pair is an error of
// its own; a pair already served is not rewritten.
func TestSyncerTellsNoCertificateYetFromABrokenOne(t *testing.T) {
	data, _ := mustPlan(t, time.Now(), nil, nil)
	s := &Syncer{CertDir: t.TempDir()}
	for name, tc := range map[string]struct {
		data     map[string][]byte
		notYet   bool
		anyError bool
	}{
		"neither half":       {map[string][]byte{CACertKey: data[CACertKey]}, true, true},
		"a certificate only": {map[string][]byte{TLSCertKey: data[TLSCertKey]}, false, true},
		"a key only":         {map[string][]byte{TLSKeyKey: data[TLSKeyKey]}, false, true},
		"both":               {data, false, false},
	} {
		err := s.write(&corev1.Secret{Data: tc.data})
		if errors.Is(err, errNoCertificate) != tc.notYet || (err != nil) != tc.anyError {
			t.Errorf("%s: %v; want not-yet %v, an error %v", name, err, tc.notYet, tc.anyError)
		}
	}
	path := filepath.Join(s.CertDir, TLSCertKey)
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.write(&corev1.Secret{Data: data}); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("the same pair was written again (a new file): the replicas would reload for nothing")
	}
}

// TestRotatorEventSaysRepairOrRotation: filling a Secret that exists but is
// empty (made by hand, or by a chart) is a rotation (Normal); replacing data
// that was there and broken is a repair (Warning CertificateRegenerated).
func TestRotatorEventSaysRepairOrRotation(t *testing.T) {
	for name, tc := range map[string]struct {
		data   map[string][]byte
		reason string
	}{
		"an empty Secret":   {nil, "Normal CertificateRotated"},
		"a corrupt serving": {map[string][]byte{TLSCertKey: []byte("garbage"), TLSKeyKey: []byte("garbage")}, "Warning CertificateRegenerated"},
	} {
		t.Run(name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "certs"}, Data: tc.data}
			cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(sec).Build()
			rec := events.NewFakeRecorder(10)
			r := &Rotator{Client: cl, Namespace: "ns", SecretName: "certs", WebhookConfigName: "none", Hosts: testHosts, Lifetimes: testLife,
				Interval: time.Second, Recorder: rec}
			if err := r.Ensure(t.Context()); err != nil {
				t.Fatal(err)
			}
			select {
			case e := <-rec.Events:
				if !strings.HasPrefix(e, tc.reason+" ") {
					t.Errorf("event %q, want %s", e, tc.reason)
				}
			default:
				t.Errorf("no event, want %s", tc.reason)
			}
		})
	}
}

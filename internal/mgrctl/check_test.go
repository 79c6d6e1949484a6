// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mgrctl

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// issue makes a certificate for host (a CA when host is ""), signed by
// parent (self-signed when nil), valid from notBefore for a day.
func issue(t *testing.T, host string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, notBefore time.Time) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "test " + host},
		NotBefore: notBefore, NotAfter: notBefore.Add(24 * time.Hour)}
	if host == "" {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	} else {
		tmpl.DNSNames, tmpl.ExtKeyUsage, tmpl.KeyUsage = []string{host}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, x509.KeyUsageDigitalSignature
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestVerifyBundle(t *testing.T) {
	const host = "mgr-webhook.mgr-webhook-system.svc"
	now := time.Now()
	ca, caKey, caPEM := issue(t, "", nil, nil, now.Add(-time.Hour))
	_, _, otherCA := issue(t, "", nil, nil, now.Add(-time.Hour))
	_, _, leaf := issue(t, host, ca, caKey, now.Add(-time.Hour))
	_, _, stale := issue(t, host, ca, caKey, now.Add(-48*time.Hour))
	for name, tc := range map[string]struct {
		bundle, cert []byte
		host         string
		ok           bool
		says         string
	}{
		"verifies":               {caPEM, leaf, host, true, "verifies the certificate"},
		"another CA":             {otherCA, leaf, host, false, "does not verify"},
		"both CAs (a rollover)":  {append(append([]byte{}, otherCA...), caPEM...), leaf, host, true, "verifies"},
		"expired":                {caPEM, stale, host, false, "expired"},
		"another name":           {caPEM, leaf, "other.mgr-webhook-system.svc", false, "does not verify"},
		"no caBundle":            {nil, leaf, host, false, "no usable caBundle"},
		"no certificate":         {caPEM, nil, host, false, "holds no certificate"},
		"a CA with its ancestry": {caPEM, append(append([]byte{}, leaf...), caPEM...), host, true, "verifies"},
	} {
		t.Run(name, func(t *testing.T) {
			ok, says := verifyBundle(tc.bundle, tc.cert, tc.host, now)
			if ok != tc.ok || !strings.Contains(says, tc.says) {
				t.Errorf("verifyBundle = %v, %q; want %v and %q", ok, says, tc.ok, tc.says)
			}
		})
	}
}

func TestSelects(t *testing.T) {
	hook := &admissionregistrationv1.MutatingWebhook{Name: "mutate.mgr.ceph.rook.io",
		ObjectSelector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rook-ceph-mgr"}},
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system"}}}},
		MatchConditions:   []admissionregistrationv1.MatchCondition{{Name: "not-being-deleted"}}}
	mgr := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "rook-ceph-mgr"}}}
	other := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}
	ns := func(name string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/metadata.name": name}}}
	}
	for name, tc := range map[string]struct {
		d     *appsv1.Deployment
		ns    *corev1.Namespace
		fails string // the selector that does not match ("" for none)
	}{
		"a mgr in rook-ceph":   {mgr, ns("rook-ceph"), ""},
		"not a mgr":            {other, ns("rook-ceph"), "objectSelector"},
		"a mgr in kube-system": {mgr, ns("kube-system"), "namespaceSelector"},
	} {
		t.Run(name, func(t *testing.T) {
			var failed []string
			for _, f := range selects(hook, tc.d, tc.ns) {
				if !f.ok {
					failed = append(failed, f.text)
				}
			}
			if tc.fails == "" && len(failed) > 0 || tc.fails != "" && (len(failed) != 1 || !strings.Contains(failed[0], tc.fails)) {
				t.Errorf("failed %q, want only %q", failed, tc.fails)
			}
		})
	}
}

// TestAPIServerCalls: how each answer to the dry-run create reads. The
// answers come from a fake clientset here; test/integration/admission has the API
// server's own, with a good caBundle and with another CA's.
func TestAPIServerCalls(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "rook-ceph-mgr-a", Namespace: "rook-ceph"}}
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	ignore := admissionregistrationv1.Ignore
	for name, tc := range map[string]struct {
		answer error
		policy *admissionregistrationv1.FailurePolicyType
		ok     bool
		says   string
	}{
		"admitted (the dry run finds it exists)": {apierrors.NewAlreadyExists(gr, d.Name), nil, true, "passed admission"},
		"refused by the webhook":                 {apierrors.NewForbidden(gr, d.Name, errors.New(`admission webhook "validate.mgr.ceph.rook.io" denied the request: spec.replicas`)), nil, true, "was answered"},
		"the call failed":                        {apierrors.NewInternalError(errors.New(`failed calling webhook "mutate.mgr.ceph.rook.io": x509: certificate signed by unknown authority`)), nil, false, "cannot call the webhook"},
		"no create right":                        {apierrors.NewForbidden(gr, d.Name, errors.New(`User "jane" cannot create resource "deployments"`)), nil, false, "needs create on deployments in rook-ceph"},
		"admitted, failing open":                 {apierrors.NewAlreadyExists(gr, d.Name), &ignore, true, "failurePolicy Ignore"},
	} {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset()
			var dryRun []string
			cs.PrependReactor("create", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
				dryRun = a.(k8stesting.CreateActionImpl).CreateOptions.DryRun
				return true, nil, tc.answer
			})
			f := apiServerCalls(t.Context(), cs, d, &admissionregistrationv1.MutatingWebhook{FailurePolicy: tc.policy})
			if f.ok != tc.ok || !strings.Contains(f.text, tc.says) {
				t.Errorf("apiServerCalls = %v, %q; want %v and %q", f.ok, f.text, tc.ok, tc.says)
			}
			if len(dryRun) != 1 || dryRun[0] != metav1.DryRunAll {
				t.Errorf("the create was not a dry run: %v", dryRun)
			}
		})
	}
}

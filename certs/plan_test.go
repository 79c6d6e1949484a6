// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package certs

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"
)

var testHosts = ServiceHosts("mgr-webhook", "mgr-webhook-system", "127.0.0.1")

func mustPlan(t *testing.T, now time.Time, data map[string][]byte, trusted bool) (map[string][]byte, Reasons) {
	t.Helper()
	out, reasons, err := Plan(now, data, testHosts, Lifetimes{CA: 90 * time.Minute, Serving: 30 * time.Minute}, trusted)
	if err != nil {
		t.Fatal(err)
	}
	return out, reasons
}

func leafOf(t *testing.T, data map[string][]byte) *x509.Certificate {
	t.Helper()
	c, err := tlsPair(data[TLSCertKey], data[TLSKeyKey])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func verify(t *testing.T, data map[string][]byte, name string, at time.Time) error {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(data[CACertKey])
	_, err := leafOf(t, data).Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: at})
	return err
}

func TestPlanLifecycle(t *testing.T) {
	t0 := time.Now()
	data, reasons := mustPlan(t, t0, nil, false)
	if len(reasons) == 0 || reasons.Repair() || verify(t, data, "mgr-webhook.mgr-webhook-system.svc", t0) != nil || verify(t, data, "127.0.0.1", t0) != nil {
		t.Fatalf("first install: %v", reasons)
	}
	if again, reasons := mustPlan(t, t0.Add(time.Minute), data, true); reasons != nil || string(again[TLSCertKey]) != string(data[TLSCertKey]) {
		t.Fatalf("a fresh bundle changed: %v", reasons)
	}

	// Two thirds into the serving certificate's life: a new one from the same CA.
	t1 := t0.Add(21 * time.Minute)
	renewed, reasons := mustPlan(t, t1, data, true)
	if len(reasons) != 1 || !strings.Contains(reasons[0].Message, "serving certificate expires") || reasons.Repair() || string(renewed[CACertKey]) != string(data[CACertKey]) {
		t.Fatalf("serving renewal: %v", reasons)
	}
	if verify(t, renewed, "mgr-webhook", t1) != nil || leafOf(t, renewed).NotAfter.Before(t1.Add(29*time.Minute)) {
		t.Fatal("renewed certificate invalid")
	}

	renewed, _ = mustPlan(t, t0.Add(45*time.Minute), renewed, true)

	// Two thirds into the CA's life: a new CA in front, the old one kept, and
	// the serving certificate kept until the configurations trust the new CA.
	t2 := t0.Add(61 * time.Minute)
	rolled, reasons := mustPlan(t, t2, renewed, false)
	if !strings.Contains(reasons.String(), "new CA") || strings.Contains(reasons.String(), "new serving") {
		t.Fatalf("CA rollover: %v", reasons)
	}
	if strings.Count(string(rolled[CACertKey]), "BEGIN CERTIFICATE") != 2 || string(rolled[TLSCertKey]) != string(renewed[TLSCertKey]) {
		t.Fatal("rollover must keep the old CA in the bundle and the old serving certificate")
	}
	if verify(t, rolled, "mgr-webhook", t2) != nil {
		t.Fatal("the kept certificate no longer verifies against the bundle")
	}
	if Trusts(renewed[CACertKey], rolled) || !Trusts(rolled[CACertKey], rolled) {
		t.Fatal("Trusts")
	}
	// Once trusted: a serving certificate from the new CA.
	final, reasons := mustPlan(t, t2.Add(time.Second), rolled, true)
	if !strings.Contains(reasons.String(), "signed by the previous CA") {
		t.Fatalf("after trust: %v", reasons)
	}
	newCA, _ := parseCert(final[CACertKey])
	if leafOf(t, final).CheckSignatureFrom(newCA) != nil {
		t.Fatal("serving certificate not from the new CA")
	}
	// After the old CA expires it leaves the bundle.
	pruned, _ := mustPlan(t, t0.Add(91*time.Minute), final, true)
	if strings.Count(string(pruned[CACertKey]), "BEGIN CERTIFICATE") != 1 {
		t.Fatal("expired CA kept in the bundle")
	}
}

func TestPlanRepairsBadData(t *testing.T) {
	now := time.Now()
	good, _ := mustPlan(t, now, nil, true)
	other, _ := mustPlan(t, now, nil, true)
	for name, tc := range map[string]struct {
		edit   func(d map[string][]byte)
		want   string
		repair bool
	}{
		"corrupt key":    {func(d map[string][]byte) { d[TLSKeyKey] = []byte("garbage") }, "unusable", true},
		"mismatched key": {func(d map[string][]byte) { d[TLSKeyKey] = other[TLSKeyKey] }, "key does not match", true},
		"foreign cert":   {func(d map[string][]byte) { d[TLSCertKey], d[TLSKeyKey] = other[TLSCertKey], other[TLSKeyKey] }, "unknown CA", true},
		"corrupt CA": {func(d map[string][]byte) {
			d[CACertKey] = []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
		}, "CA unparsable", true},
		"CA key mismatched": {func(d map[string][]byte) { d[CAKeyKey] = other[CAKeyKey] }, "CA key does not match", true},
		"missing name": {func(d map[string][]byte) {
			narrow, _, _ := Plan(now, nil, ServiceHosts("x", "y"), Lifetimes{CA: time.Hour, Serving: time.Hour}, true)
			for k, v := range narrow {
				d[k] = v
			}
		}, "lacks the name mgr-webhook", false},
	} {
		t.Run(name, func(t *testing.T) {
			d := map[string][]byte{}
			for k, v := range good {
				d[k] = v
			}
			tc.edit(d)
			fixed, reasons := mustPlan(t, now, d, false)
			if !strings.Contains(reasons.String(), tc.want) {
				t.Errorf("reasons %v, want one mentioning %q", reasons, tc.want)
			}
			if reasons.Repair() != tc.repair {
				t.Errorf("reasons %v: repair %v, want %v", reasons, reasons.Repair(), tc.repair)
			}
			if err := verify(t, fixed, "mgr-webhook.mgr-webhook-system.svc", now); err != nil {
				t.Errorf("repaired bundle does not verify: %v", err)
			}
		})
	}
}

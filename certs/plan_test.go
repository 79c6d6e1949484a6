// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package certs

import (
	"bytes"
	"crypto/x509"
	"strings"
	"testing"
	"time"
)

var testHosts = ServiceHosts("mgr-webhook", "mgr-webhook-system", "127.0.0.1")

var testLife = Lifetimes{CA: 90 * time.Minute, Serving: 30 * time.Minute, Settle: 10 * time.Second}

func mustPlan(t *testing.T, now time.Time, data map[string][]byte, trust Trust) (map[string][]byte, Reasons) {
	t.Helper()
	out, reasons, err := Plan(now, data, testHosts, testLife, trust)
	if err != nil {
		t.Fatal(err)
	}
	return out, reasons
}

// carrying is the Trust of two webhooks that carry the bundles' CAs.
func carrying(bundles ...[]byte) Trust {
	b := bytes.Join(bundles, nil)
	return Trust{b, b}
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
	data, reasons := mustPlan(t, t0, nil, nil)
	if len(reasons) == 0 || reasons.Repair() || verify(t, data, "mgr-webhook.mgr-webhook-system.svc", t0) != nil || verify(t, data, "127.0.0.1", t0) != nil {
		t.Fatalf("first install: %v", reasons)
	}
	if Settled(t0.Add(testLife.Settle-time.Second), data, testLife) || !Settled(t0.Add(testLife.Settle), data, testLife) {
		t.Fatal("a new serving certificate settles after Settle, not before")
	}
	if again, reasons := mustPlan(t, t0.Add(time.Minute), data, carrying(data[CACertKey])); reasons != nil || string(again[TLSCertKey]) != string(data[TLSCertKey]) {
		t.Fatalf("a fresh bundle changed: %v", reasons)
	}

	// Two thirds into the serving certificate's life: a new one from the same CA.
	t1 := t0.Add(21 * time.Minute)
	renewed, reasons := mustPlan(t, t1, data, carrying(data[CACertKey]))
	if len(reasons) != 1 || !strings.Contains(reasons[0].Message, "serving certificate expires") || reasons.Repair() || string(renewed[CACertKey]) != string(data[CACertKey]) {
		t.Fatalf("serving renewal: %v", reasons)
	}
	if verify(t, renewed, "mgr-webhook", t1) != nil || leafOf(t, renewed).NotAfter.Before(t1.Add(29*time.Minute)) {
		t.Fatal("renewed certificate invalid")
	}

	renewed, _ = mustPlan(t, t0.Add(45*time.Minute), renewed, carrying(data[CACertKey]))

	// Two thirds into the CA's life: a new CA in front, the old one kept, and
	// the serving certificate kept until the new CA has settled in the bundles.
	t2 := t0.Add(61 * time.Minute)
	rolled, reasons := mustPlan(t, t2, renewed, carrying(renewed[CACertKey]))
	if !strings.Contains(reasons.String(), "new CA") || strings.Contains(reasons.String(), "new serving") {
		t.Fatalf("CA rollover: %v", reasons)
	}
	if strings.Count(string(rolled[CACertKey]), "BEGIN CERTIFICATE") != 2 || string(rolled[TLSCertKey]) != string(renewed[TLSCertKey]) {
		t.Fatal("rollover must keep the old CA in the bundle and the old serving certificate")
	}
	if verify(t, rolled, "mgr-webhook", t2) != nil {
		t.Fatal("the kept certificate no longer verifies against the bundle")
	}
	if trusts(renewed[CACertKey], rolled) || !trusts(rolled[CACertKey], rolled) {
		t.Fatal("Trusts")
	}
	// Carried but not yet settled: nothing changes.
	if _, reasons := mustPlan(t, t2.Add(testLife.Settle-time.Second), rolled, carrying(rolled[CACertKey])); reasons != nil {
		t.Fatalf("the new CA signed before it settled: %v", reasons)
	}
	// Settled: a serving certificate from the new CA.
	final, reasons := mustPlan(t, t2.Add(testLife.Settle), rolled, carrying(rolled[CACertKey]))
	if !strings.Contains(reasons.String(), "signed by the previous CA") {
		t.Fatalf("after trust: %v", reasons)
	}
	newCA, _ := parseCert(final[CACertKey])
	if leafOf(t, final).CheckSignatureFrom(newCA) != nil {
		t.Fatal("serving certificate not from the new CA")
	}
	// After the old CA expires it leaves the bundle.
	pruned, _ := mustPlan(t, t0.Add(91*time.Minute), final, carrying(final[CACertKey]))
	if strings.Count(string(pruned[CACertKey]), "BEGIN CERTIFICATE") != 1 {
		t.Fatal("expired CA kept in the bundle")
	}
}

// TestPlanRolloverWithAnExpiringLeaf: when the CA and the serving certificate
// are renewed in the same check, the previous CA, whose key the check still
// holds, signs: the new CA has not settled.
func TestPlanRolloverWithAnExpiringLeaf(t *testing.T) {
	t0 := time.Now()
	data, _ := mustPlan(t, t0, nil, nil)
	// 61 min: the CA (90 min) and a leaf issued at 40 min (30 min) both due.
	leafAt := t0.Add(40 * time.Minute)
	mid, _ := mustPlan(t, leafAt, data, carrying(data[CACertKey]))
	at := t0.Add(61 * time.Minute)
	rolled, reasons := mustPlan(t, at, mid, carrying(mid[CACertKey]))
	if !strings.Contains(reasons.String(), "new CA") {
		t.Fatalf("reasons %v", reasons)
	}
	oldCA, _ := parseCert(data[CACertKey])
	leaf := leafOf(t, rolled)
	if leaf.CheckSignatureFrom(oldCA) != nil {
		t.Fatal("the serving certificate must come from the previous CA, which the webhooks trust")
	}
	if !leaf.NotAfter.Equal(oldCA.NotAfter) {
		t.Errorf("serving certificate until %s; want its CA's end %s", leaf.NotAfter, oldCA.NotAfter)
	}
}

// TestPlanRepairWaitsForTrust: a repair that mints a CA (the Secret deleted,
// its CA unusable) while the webhooks carry a bundle issues no serving
// certificate until the new CA has settled in it, and the bundles narrow
// only once that certificate has settled too.
func TestPlanRepairWaitsForTrust(t *testing.T) {
	now := time.Now()
	good, _ := mustPlan(t, now.Add(-time.Minute), nil, nil)
	for name, tc := range map[string]struct {
		data   map[string][]byte
		repair bool
	}{
		"Secret deleted": {nil, false},
		"CA corrupted": {map[string][]byte{
			CACertKey: []byte("garbage"), CAKeyKey: good[CAKeyKey], TLSCertKey: good[TLSCertKey], TLSKeyKey: good[TLSKeyKey],
		}, true},
	} {
		t.Run(name, func(t *testing.T) {
			trust := carrying(good[CACertKey])
			fixed, reasons := mustPlan(t, now, tc.data, trust)
			if !strings.Contains(reasons.String(), "a new one once the webhooks have trusted the new CA") || reasons.Repair() != tc.repair {
				t.Fatalf("reasons %v (repair %v); want the serving certificate to wait, repair %v", reasons, reasons.Repair(), tc.repair)
			}
			if string(fixed[TLSCertKey]) != string(tc.data[TLSCertKey]) {
				t.Fatal("a serving certificate from a CA the webhooks do not carry")
			}
			if Settled(now.Add(time.Hour), fixed, testLife) {
				t.Fatal("settled without a serving certificate from the Secret's CA: the bundles would drop the served one's CA")
			}
			// The rotator adds the new CA to the bundles; it still has to settle.
			trust = carrying(good[CACertKey], fixed[CACertKey])
			if _, reasons := mustPlan(t, now.Add(testLife.Settle-time.Second), fixed, trust); reasons != nil {
				t.Fatalf("signed before the new CA settled: %v", reasons)
			}
			at := now.Add(testLife.Settle)
			issued, reasons := mustPlan(t, at, fixed, trust)
			if err := verify(t, issued, "mgr-webhook.mgr-webhook-system.svc", at); err != nil || reasons.Repair() != tc.repair {
				t.Fatalf("after the settle time: %v (reasons %v)", err, reasons)
			}
			if Settled(at.Add(testLife.Settle-time.Second), issued, testLife) || !Settled(at.Add(testLife.Settle), issued, testLife) {
				t.Fatal("the bundles may narrow only once the new serving certificate has settled")
			}
		})
	}
}

func TestPlanRepairsBadData(t *testing.T) {
	now := time.Now()
	good, _ := mustPlan(t, now.Add(-time.Minute), nil, nil)
	other, _ := mustPlan(t, now.Add(-time.Minute), nil, nil)
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
			narrow, _, _ := Plan(now.Add(-time.Minute), nil, ServiceHosts("x", "y"), testLife, nil)
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
			trust := carrying(d[CACertKey])
			fixed, reasons := mustPlan(t, now, d, trust)
			if !strings.Contains(reasons.String(), tc.want) {
				t.Errorf("reasons %v, want one mentioning %q", reasons, tc.want)
			}
			if reasons.Repair() != tc.repair {
				t.Errorf("reasons %v: repair %v, want %v", reasons, reasons.Repair(), tc.repair)
			}
			if !trusts(trust[0], fixed) {
				// A new CA: it signs once it has settled in the bundles.
				fixed, _ = mustPlan(t, now.Add(testLife.Settle), fixed, carrying(d[CACertKey], fixed[CACertKey]))
			}
			if err := verify(t, fixed, "mgr-webhook.mgr-webhook-system.svc", now); err != nil {
				t.Errorf("repaired bundle does not verify: %v", err)
			}
		})
	}
}

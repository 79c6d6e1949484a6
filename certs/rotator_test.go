// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package certs

import (
	"crypto/x509"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// record is what one side saw from a time on.
type record struct {
	at    time.Time
	value []byte
}

// asOf is the value of the last record at or before at.
func asOf(h []record, at time.Time) []byte {
	var v []byte
	for _, r := range h {
		if r.at.After(at) {
			break
		}
		v = r.value
	}
	return v
}

// TestRotatorNeverServesWhatTheAPIServerCannotVerify runs the rotator on a
// clock through a first install, a CA rollover, the Secret deleted and its CA
// corrupted, and checks at every step that the serving certificate the
// replicas serve verifies against the caBundle the API server uses, when
// either side acts on a change up to just under Settle late (the API server
// applies a caBundle when its informer sees it, the replicas load a
// certificate when theirs does).
func TestRotatorNeverServesWhatTheAPIServerCannotVerify(t *testing.T) {
	const ns, name = "mgr-webhook-system", "mgr-webhook"
	life := Lifetimes{CA: 10 * time.Minute, Serving: 3 * time.Minute, Settle: 10 * time.Second}
	lags := []time.Duration{0, life.Settle - time.Second}
	for _, apiLag := range lags {
		for _, replicaLag := range lags {
			t.Run(fmt.Sprintf("API server %s late, replicas %s late", apiLag, replicaLag), func(t *testing.T) {
				ctx := t.Context()
				hook := func() admissionregistrationv1.WebhookClientConfig {
					return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: name}}
				}
				cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(
					&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "m.example", ClientConfig: hook()}}},
					&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "v.example", ClientConfig: hook()}}},
				).Build()
				now := time.Now()
				r := &Rotator{Client: cl, Namespace: ns, SecretName: name + "-certs", WebhookConfigName: name,
					Hosts: ServiceHosts(name, ns), Lifetimes: life, Interval: time.Second, Now: func() time.Time { return now }}
				key := client.ObjectKey{Namespace: ns, Name: r.SecretName}
				var bundles, leaves []record
				var installed time.Time
				leafCAs := map[string]bool{}
				step := func() {
					t.Helper()
					if err := r.Ensure(ctx); err != nil {
						t.Fatalf("at %s: %v", now.Format(time.TimeOnly), err)
					}
					m := &admissionregistrationv1.MutatingWebhookConfiguration{}
					v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
					if err := cl.Get(ctx, client.ObjectKey{Name: name}, m); err != nil {
						t.Fatal(err)
					}
					if err := cl.Get(ctx, client.ObjectKey{Name: name}, v); err != nil {
						t.Fatal(err)
					}
					if string(m.Webhooks[0].ClientConfig.CABundle) != string(v.Webhooks[0].ClientConfig.CABundle) {
						t.Fatalf("at %s: the two configurations carry different bundles", now.Format(time.TimeOnly))
					}
					bundles = append(bundles, record{now, m.Webhooks[0].ClientConfig.CABundle})
					if installed.IsZero() && len(m.Webhooks[0].ClientConfig.CABundle) > 0 {
						installed = now
					}
					s := &corev1.Secret{}
					if err := cl.Get(ctx, key, s); err == nil && len(s.Data[TLSCertKey]) > 0 {
						// The replicas keep what they serve while the Secret has none.
						leaves = append(leaves, record{now, s.Data[TLSCertKey]})
						if c, err := parseCert(s.Data[TLSCertKey]); err == nil {
							leafCAs[c.Issuer.CommonName] = true
						}
					}
					// What each side uses, checked on the half second too.
					for _, at := range []time.Time{now, now.Add(500 * time.Millisecond)} {
						served := asOf(leaves, at.Add(-replicaLag))
						if served == nil || at.Before(installed.Add(apiLag)) {
							continue // first install: nothing served or called yet
						}
						leaf, err := parseCert(served)
						if err != nil {
							t.Fatalf("at %s: the replicas serve garbage: %v", at.Format(time.TimeOnly), err)
						}
						pool := x509.NewCertPool()
						pool.AppendCertsFromPEM(asOf(bundles, at.Add(-apiLag)))
						if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name + "." + ns + ".svc", CurrentTime: at}); err != nil {
							t.Fatalf("at %s: the API server cannot verify what the replicas serve: %v", at.Format(time.TimeOnly), err)
						}
					}
					now = now.Add(time.Second)
				}
				run := func(d time.Duration) {
					for end := now.Add(d); now.Before(end); {
						step()
					}
				}
				secret := func() *corev1.Secret {
					s := &corev1.Secret{}
					if err := cl.Get(ctx, key, s); err != nil {
						t.Fatal(err)
					}
					return s
				}

				run(time.Minute) // first install
				if !trusts(asOf(bundles, now), secret().Data) {
					t.Fatal("first install: the bundles lack the Secret's CA")
				}
				run(8 * time.Minute) // a CA rollover (at 6m40s) and serving renewals
				if len(leafCAs) < 2 {
					t.Fatalf("no CA rollover seen: serving certificates from %v", leafCAs)
				}
				if err := cl.Delete(ctx, secret()); err != nil {
					t.Fatal(err)
				}
				run(time.Minute)
				s := secret()
				s.Data[CACertKey] = []byte("garbage")
				if err := cl.Update(ctx, s); err != nil {
					t.Fatal(err)
				}
				run(time.Minute)
				if len(leafCAs) < 4 || !Settled(now, secret().Data, life) {
					t.Fatalf("serving certificates from %d CAs, want 4 (install, rollover, two repairs); settled: %v", len(leafCAs), Settled(now, secret().Data, life))
				}
				// Settled, the bundles hold only the Secret's CAs again.
				if got, want := string(asOf(bundles, now)), string(secret().Data[CACertKey]); got != want {
					t.Errorf("the bundles did not narrow to the Secret's CA bundle:\n%s\nwant\n%s", got, want)
				}
			})
		}
	}
}

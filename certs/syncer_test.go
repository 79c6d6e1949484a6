// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package certs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSyncerKeepsTheCurrentCertificate: a Secret whose serving certificate is
// corrupt, expired or not yet valid is not written over the one being served.
func TestSyncerKeepsTheCurrentCertificate(t *testing.T) {
	hosts := Hosts{DNSNames: []string{"mgr-webhook.mgr-webhook-system.svc"}}
	ca, caKey, err := newCA(time.Now().Add(-48*time.Hour), 96*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	secret := func(notBefore time.Time, life time.Duration) *corev1.Secret {
		c, k, err := newServing(notBefore, life, hosts, ca, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "certs"}, Data: map[string][]byte{TLSCertKey: c, TLSKeyKey: k}}
	}
	s := &Syncer{CertDir: t.TempDir()}
	good := secret(time.Now().Add(-time.Hour), 2*time.Hour)
	if err := s.write(good); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]*corev1.Secret{
		"expired":       secret(time.Now().Add(-3*time.Hour), time.Hour),
		"not yet valid": secret(time.Now().Add(time.Hour), time.Hour),
		"corrupt":       {Data: map[string][]byte{TLSCertKey: []byte("garbage"), TLSKeyKey: good.Data[TLSKeyKey]}},
	} {
		err := s.write(bad)
		if err == nil {
			t.Errorf("%s: written", name)
		}
		if name != "corrupt" && !strings.Contains(err.Error(), "valid only from") {
			t.Errorf("%s: %v", name, err)
		}
		served, _ := os.ReadFile(filepath.Join(s.CertDir, TLSCertKey))
		if string(served) != string(good.Data[TLSCertKey]) {
			t.Errorf("%s: the served certificate was replaced", name)
		}
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestStatusKeyLength: a status key of 32 bytes is used, one of 31 is
// refused with the fix (a short key would make forged statuses cheap), and a
// missing one is made at 32.
func TestStatusKeyLength(t *testing.T) {
	for n, ok := range map[int]bool{31: false, 32: true, 64: true} {
		key := bytes.Repeat([]byte{7}, n)
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mgr-webhook-system", Name: StatusKeySecretName}, Data: map[string][]byte{statusKeyKey: key}}
		cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(sec).Build()
		l := &statusKeyLoader{client: cl, reader: cl, namespace: "mgr-webhook-system"}
		got, err := l.load(context.Background())
		switch {
		case ok && (err != nil || !bytes.Equal(got, key)):
			t.Errorf("a key of %d bytes: %v, %d bytes back", n, err, len(got))
		case !ok && (err == nil || !strings.Contains(err.Error(), "delete the Secret")):
			t.Errorf("a key of %d bytes: %v, want a refusal that names the fix", n, err)
		}
	}
	cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	got, err := (&statusKeyLoader{client: cl, reader: cl, namespace: "mgr-webhook-system"}).load(context.Background())
	if err != nil || len(got) != 32 {
		t.Errorf("no Secret: %v, a key of %d bytes; want one of 32 made", err, len(got))
	}
}

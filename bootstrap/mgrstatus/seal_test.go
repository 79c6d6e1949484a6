// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mgrstatus

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestStatusKeyLength: a status key of 32 bytes is used, one of 31 is
// refused with the fix (a short key would make forged statuses cheap), and a
// missing one is made at 32.
func TestStatusKeyLength(t *testing.T) {
	for n, ok := range map[int]bool{31: false, 32: true, 64: true} {
		key := bytes.Repeat([]byte{7}, n)
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mgr-webhook-system", Name: KeySecretName}, Data: map[string][]byte{statusKeyKey: key}}
		cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(sec).Build()
		l := &keyLoader{client: cl, reader: cl, namespace: "mgr-webhook-system", wrote: func() {}}
		got, err := l.load(t.Context())
		switch {
		case ok && (err != nil || !bytes.Equal(got, key)):
			t.Errorf("a key of %d bytes: %v, %d bytes back", n, err, len(got))
		case !ok && (err == nil || !strings.Contains(err.Error(), "delete the Secret")):
			t.Errorf("a key of %d bytes: %v, want a refusal that names the fix", n, err)
		}
	}
	cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	got, err := (&keyLoader{client: cl, reader: cl, namespace: "mgr-webhook-system", wrote: func() {}}).load(t.Context())
	if err != nil || len(got) != 32 {
		t.Errorf("no Secret: %v, a key of %d bytes; want one of 32 made", err, len(got))
	}
}

// TestSealedBy: a reader holding the status key Secret (mgrctl check)
// trusts exactly the statuses the controller sealed for that Deployment:
// not one edited after sealing, moved from another Deployment, or sealed
// with another key; a short key is an error, not a verdict.
func TestSealedBy(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mgr-webhook-system", Name: KeySecretName}, Data: map[string][]byte{statusKeyKey: key}}
	st := Status{Phase: PhaseReady, ObservedGeneration: 3, Modules: []string{"dashboard"}}
	st.Seal = sealWith(key, "uid-a", st)
	edited := st
	edited.Phase = PhaseError
	other := st
	other.Seal = sealWith(bytes.Repeat([]byte{8}, 32), "uid-a", st)
	for name, tc := range map[string]struct {
		uid  string
		st   Status
		want bool
	}{
		"the controller's":     {"uid-a", st, true},
		"edited after sealing": {"uid-a", edited, false},
		"another Deployment's": {"uid-b", st, false},
		"another key's":        {"uid-a", other, false},
		"unsealed":             {"uid-a", Status{Phase: PhaseReady, ObservedGeneration: 3}, false},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := SealedBy(sec, types.UID(tc.uid), tc.st)
			if err != nil || got != tc.want {
				t.Errorf("SealedBy = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	short := sec.DeepCopy()
	short.Data[statusKeyKey] = key[:31]
	if _, err := SealedBy(short, "uid-a", st); err == nil {
		t.Error("a 31-byte key gave a verdict; want an error")
	}
}

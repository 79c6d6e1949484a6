// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// Narrow unit tests of the ownership decisions on a fake client; the real
// API server and Ceph prove them end to end in test/bootstrap.

func mgr(name, id string, uid types.UID) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: name, UID: uid,
		Labels: map[string]string{contract.LabelApp: contract.AppName, contract.LabelMgrID: id}}}
}

func keyring(owner *appsv1.Deployment) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: contract.KeyringSecretName("a")}}
	if owner != nil {
		s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: owner.Name, UID: owner.UID, Controller: ptrTo(true)}}
	}
	return s
}

func ptrTo[T any](v T) *T { return &v }

func TestKeyUser(t *testing.T) {
	deleted := mgr("rook-ceph-mgr-a", "a", "uid-a")
	now := metav1.Now()
	dying := mgr("copy-a", "a", "uid-copy")
	dying.DeletionTimestamp, dying.Finalizers = &now, []string{"x"}
	for name, tc := range map[string]struct {
		objs []client.Object
		want string // "" when the key may go
	}{
		"alone, own keyring":         {[]client.Object{deleted, keyring(deleted)}, ""},
		"alone, no keyring":          {[]client.Object{deleted}, ""},
		"another live Deployment":    {[]client.Object{deleted, mgr("copy-a", "a", "uid-copy"), keyring(deleted)}, "Deployment copy-a"},
		"another one being deleted":  {[]client.Object{deleted, dying, keyring(deleted)}, ""},
		"another mgr id":             {[]client.Object{deleted, mgr("rook-ceph-mgr-b", "b", "uid-b")}, ""},
		"keyring of another":         {[]client.Object{deleted, keyring(mgr("other", "a", "uid-other"))}, "controlled by Deployment other"},
		"keyring without controller": {[]client.Object{deleted, keyring(nil)}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(tc.objs...).Build()
			r := &Reconciler{Client: cl, APIReader: cl}
			got, err := r.keyUser(t.Context(), deleted, "a")
			if err != nil {
				t.Fatal(err)
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("keyUser = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDashboardPassword(t *testing.T) {
	d := mgr("rook-ceph-mgr-a", "a", "uid-a")
	secret := func(data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: contract.DashboardPasswordSecretName}, Data: data}
	}
	t.Run("created when missing", func(t *testing.T) {
		cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
		pw, err := (&Reconciler{Client: cl, APIReader: cl}).dashboardPassword(t.Context(), d)
		if err != nil || len(pw) < 24 {
			t.Fatalf("password %d bytes, %v", len(pw), err)
		}
		s := &corev1.Secret{}
		if err := cl.Get(t.Context(), client.ObjectKeyFromObject(secret(nil)), s); err != nil || string(s.Data["password"]) != string(pw) {
			t.Errorf("Secret not created with the password: %v", err)
		}
	})
	t.Run("kept when present", func(t *testing.T) {
		cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(secret(map[string][]byte{"password": []byte("theirs")})).Build()
		pw, err := (&Reconciler{Client: cl, APIReader: cl}).dashboardPassword(t.Context(), d)
		if err != nil || string(pw) != "theirs" {
			t.Errorf("password %q, %v", pw, err)
		}
	})
	t.Run("no password key: one clear error, Secret untouched", func(t *testing.T) {
		cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(secret(map[string][]byte{"other": []byte("x")})).Build()
		_, err := (&Reconciler{Client: cl, APIReader: cl}).dashboardPassword(t.Context(), d)
		if err == nil || !strings.Contains(err.Error(), contract.DashboardPasswordSecretName) || !strings.Contains(err.Error(), `without key "password"`) {
			t.Fatalf("error %v; want one naming the Secret and the missing key", err)
		}
		s := &corev1.Secret{}
		_ = cl.Get(t.Context(), client.ObjectKeyFromObject(secret(nil)), s)
		if _, ok := s.Data["password"]; ok {
			t.Error("the controller wrote into a Secret it does not own")
		}
	})
}

func TestNotOwnedNamesTheOwner(t *testing.T) {
	d := mgr("copy-a", "a", "uid-copy")
	err := notOwned(d, "Secret", keyring(mgr("rook-ceph-mgr-a", "a", "uid-a")))
	for _, want := range []string{"Secret rook-ceph-mgr-a-keyring", "Deployment rook-ceph-mgr-a", "not to Deployment copy-a", "neither adopts nor changes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// TestDuplicateNeverTouchesTheLiveKey: a second Deployment of mgr a (one the
// webhook would refuse, made here without it) is neither given mgr a's
// keyring nor allowed to take it: the controller reports the conflict, and
// deleting the duplicate leaves mgr a's cephx key, keyring Secret and
// Services as they were, and mgr a Ready.
func TestDuplicateNeverTouchesTheLiveKey(t *testing.T) {
	ctx := t.Context()
	c := cephs[nsMain]
	live := readyMgr(t, nsMain, "a", nil)
	key, err := c.GetKey(ctx, "mgr.a")
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{}
	if err := get(ctx, nsMain, contract.KeyringSecretName("a"), secret); err != nil {
		t.Fatal(err)
	}

	dup := mgrDeployment(t, nsMain, "a", 0, nil)
	dup.Name = "copy-of-mgr-a"
	if err := k8s.Create(ctx, dup); err != nil {
		t.Fatal(err)
	}
	note := waitEvent(t, nsMain, dup.Name, bootstrap.ReasonNotOwned, 30*time.Second)
	if !strings.Contains(note, live) || !strings.Contains(note, "neither adopts nor changes") {
		t.Errorf("%s Event %q does not name the owner %s", bootstrap.ReasonNotOwned, note, live)
	}
	if st := waitPhase(t, nsMain, dup.Name, mgrstatus.PhaseError, 10*time.Second); !strings.Contains(st.LastError, live) {
		t.Errorf("duplicate's lastError %q", st.LastError)
	}

	if err := k8s.Delete(ctx, dup); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "duplicate gone", func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(get(ctx, nsMain, dup.Name, &appsv1.Deployment{})), nil
	})
	if note := eventReasons(t, nsMain, dup.Name)[bootstrap.ReasonKeyKept]; !strings.Contains(note, "Deployment "+live) {
		t.Errorf("no %s Event naming %s: %q", bootstrap.ReasonKeyKept, live, note)
	}
	time.Sleep(2 * time.Second) // what the garbage collector would take, it takes now
	if got, err := c.GetKey(ctx, "mgr.a"); err != nil || got != key {
		t.Errorf("ceph auth get-key mgr.a after the duplicate went: %v (changed: %v)", err, got != key)
	}
	after := &corev1.Secret{}
	if err := get(ctx, nsMain, contract.KeyringSecretName("a"), after); err != nil || after.UID != secret.UID || string(after.Data["keyring"]) != string(secret.Data["keyring"]) {
		t.Errorf("mgr a's keyring Secret changed or went: %v", err)
	}
	for _, name := range []string{contract.MetricsServiceName, contract.DashboardServiceName} {
		svc := &corev1.Service{}
		if err := get(ctx, nsMain, name, svc); err != nil {
			t.Errorf("Service %s: %v", name, err)
		} else {
			assertAmongOwners(t, svc.OwnerReferences, live)
		}
	}
	if s := status(t, nsMain, live); s.Phase != mgrstatus.PhaseReady || !testenv.MustMgrPodReady(t, k8s, nsMain, "a") {
		t.Errorf("mgr a: phase %s, pod Ready %v", s.Phase, testenv.MustMgrPodReady(t, k8s, nsMain, "a"))
	}
}

// TestLeftAlone: a Deployment owned by a Rook CephCluster gets no finalizer,
// keyring or Services; a mgr opted out with mgr.ceph.rook.io/managed=false is
// released (finalizer removed) and deleting it leaves its key in Ceph.
func TestLeftAlone(t *testing.T) {
	ctx := t.Context()
	c := cephs[nsMain]
	cc := &unstructured.Unstructured{}
	cc.SetAPIVersion("ceph.rook.io/v1")
	cc.SetKind("CephCluster")
	cc.SetNamespace(nsMain)
	cc.SetName(nsMain)
	if err := k8s.Create(ctx, cc); err != nil {
		t.Fatal(err)
	}
	rook := mgrDeployment(t, nsMain, "r", 0, nil)
	rook.OwnerReferences = []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: cc.GetName(), UID: cc.GetUID(), Controller: ptr(true)}}
	if err := k8s.Create(ctx, rook); err != nil {
		t.Fatal(err)
	}
	opted := mgrDeployment(t, nsMain, "o", 0, nil)
	if err := k8s.Create(ctx, opted); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "mgr o bootstrapped", func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		return get(ctx, nsMain, opted.Name, d) == nil && controllerutil.ContainsFinalizer(d, contract.FinalizerCephxKey) &&
			get(ctx, nsMain, contract.KeyringSecretName("o"), &corev1.Secret{}) == nil, nil
	})
	d := &appsv1.Deployment{}
	if err := get(ctx, nsMain, opted.Name, d); err != nil {
		t.Fatal(err)
	}
	p := client.MergeFrom(d.DeepCopy())
	d.Labels[contract.LabelManaged] = "false"
	if err := k8s.Patch(ctx, d, p); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, nsMain, opted.Name, bootstrap.ReasonReleased, 20*time.Second)
	eventually(t, 10*time.Second, "finalizer removed", func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		return get(ctx, nsMain, opted.Name, d) == nil && !controllerutil.ContainsFinalizer(d, contract.FinalizerCephxKey), nil
	})
	key, err := c.GetKey(ctx, "mgr.o")
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "opted-out Deployment gone", func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(get(ctx, nsMain, opted.Name, &appsv1.Deployment{})), nil
	})
	if got, err := c.GetKey(ctx, "mgr.o"); err != nil || got != key {
		t.Errorf("mgr.o key after deleting the opted-out Deployment: %v", err)
	}

	// By now the controller has long seen the Rook-owned Deployment.
	got := &appsv1.Deployment{}
	if err := get(ctx, nsMain, rook.Name, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Finalizers) != 0 || got.Annotations[contract.AnnotationBootstrapStatus] != "" {
		t.Errorf("Rook's Deployment was touched: finalizers %v, status %q", got.Finalizers, got.Annotations[contract.AnnotationBootstrapStatus])
	}
	if err := get(ctx, nsMain, contract.KeyringSecretName("r"), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("a keyring Secret made for Rook's Deployment: %v", err)
	}
	for _, name := range []string{contract.MetricsServiceName, contract.DashboardServiceName} {
		svc := &corev1.Service{}
		if err := get(ctx, nsMain, name, svc); err == nil {
			for _, ref := range svc.OwnerReferences {
				if ref.UID == got.UID {
					t.Errorf("Service %s lists Rook's Deployment as an owner", name)
				}
			}
		}
	}
	if _, err := c.GetKey(ctx, "mgr.r"); err == nil {
		t.Error("a cephx key was made for Rook's Deployment")
	}
	if err := k8s.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ceph(ctx, "auth", "rm", "mgr.o"); err != nil {
		t.Fatal(err)
	}
}

// TestDashboardPasswordSecretWithoutPassword: a password Secret without its
// key is reported once per attempt, naming the Secret and the fix, instead of
// a create-read loop; adding the password lets the dashboard finish.
func TestDashboardPasswordSecretWithoutPassword(t *testing.T) {
	ctx := t.Context()
	name := readyMgr(t, nsEast, "a", map[string]string{contract.AnnotationModules: "prometheus"})
	pw := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: nsEast, Name: contract.DashboardPasswordSecretName}, Data: map[string][]byte{"other": []byte("x")}}
	if err := k8s.Create(ctx, pw); err != nil {
		t.Fatal(err)
	}
	writes := metric(t, "mgr_bootstrap_api_writes_total", nil)
	d := &appsv1.Deployment{}
	if err := get(ctx, nsEast, name, d); err != nil {
		t.Fatal(err)
	}
	p := client.MergeFrom(d.DeepCopy())
	d.Annotations[contract.AnnotationModules] = "prometheus,dashboard"
	if err := k8s.Patch(ctx, d, p); err != nil {
		t.Fatal(err)
	}
	note := waitEvent(t, nsEast, name, bootstrap.ReasonDashboardPasswordInvalid, 2*time.Minute)
	if !strings.Contains(note, contract.DashboardPasswordSecretName) || !strings.Contains(note, `without key "password"`) {
		t.Errorf("Event %q does not name the Secret and the missing key", note)
	}
	st := waitPhase(t, nsEast, name, mgrstatus.PhaseError, 10*time.Second)
	if !strings.Contains(st.LastError, contract.DashboardPasswordSecretName) {
		t.Errorf("lastError %q", st.LastError)
	}
	// A loop would create the Secret again and again; each attempt writes
	// at most the one create and the status.
	if w := metric(t, "mgr_bootstrap_api_writes_total", nil) - writes; w > 20 {
		t.Errorf("%v API writes while the Secret lacked its password", w)
	}
	if err := get(ctx, nsEast, contract.DashboardPasswordSecretName, pw); err != nil {
		t.Fatal(err)
	}
	if _, ok := pw.Data["password"]; ok || string(pw.Data["other"]) != "x" {
		t.Error("the controller changed a Secret it does not own")
	}
	p = client.MergeFrom(pw.DeepCopy())
	pw.Data["password"] = []byte("s3cret-Passw0rd-for-test")
	if err := k8s.Patch(ctx, pw, p); err != nil {
		t.Fatal(err)
	}
	if st := waitPhase(t, nsEast, name, mgrstatus.PhaseReady, 2*time.Minute); !st.Dashboard {
		t.Errorf("status %+v: dashboard not configured after the password was added", st)
	}
}

func ptr[T any](v T) *T { return &v }

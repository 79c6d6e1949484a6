// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// TestDuplicateMgrIDAndScaleRefused: a second Deployment of a running mgr id
// and a scale past one replica are refused with the field and the fix, and
// the live mgr keeps its cephx key and stays Ready.
func TestDuplicateMgrIDAndScaleRefused(t *testing.T) {
	ns, name := env.Namespaces[0], "rook-ceph-mgr-a"
	explainOnFailure(t, ns, name)
	apply(t, env.manifest(t, ns, "a", nil))
	waitReady(t, ns, name)
	key := cephKey(t, ns, "mgr.a")

	dup := strings.Replace(string(env.manifest(t, ns, "a", nil)), "name: rook-ceph-mgr-a", "name: second-mgr-a", 1)
	out, err := env.kubectl(t, []byte(dup), "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "metadata.name") || !strings.Contains(out, `must be named "rook-ceph-mgr-a"`) {
		t.Errorf("a second Deployment of mgr a: %v\n%s\nwant a denial naming metadata.name and rook-ceph-mgr-a", err, out)
	}
	out, err = env.kubectl(t, nil, "scale", "-n", ns, "deployment/"+name, "--replicas=3")
	if err == nil || !strings.Contains(out, "spec.replicas") || !strings.Contains(out, "at most 1 pod") {
		t.Errorf("kubectl scale --replicas=3: %v\n%s\nwant a denial naming spec.replicas", err, out)
	}
	if r := *deployment(t, ns, name).Spec.Replicas; r != 1 {
		t.Errorf("replicas %d after the refused scale", r)
	}
	if got := cephKey(t, ns, "mgr.a"); got != key {
		t.Error("mgr a's cephx key changed")
	}
	if st := waitReady(t, ns, name); !testenv.MustMgrPodReady(t, env.Client, ns, "a") {
		t.Errorf("mgr a: status %+v, pod not Ready", st)
	}
}

// TestTightenedPolicyLeavesMgrsWritable: the webhook restarted with a policy
// that no longer admits the running mgr's release (minimum Ceph 17 for a v16
// mgr, one release above the mgr's) refuses that mgr as new, yet the existing one can still be labelled,
// annotated and edited where the edit makes nothing worse, and the controller
// still writes its status; an image change to another old release is refused.
func TestTightenedPolicyLeavesMgrsWritable(t *testing.T) {
	ctx := context.Background()
	ns, name := env.Namespaces[0], "rook-ceph-mgr-a"
	explainOnFailure(t, ns, name)
	apply(t, env.manifest(t, ns, "a", nil))
	waitReady(t, ns, name)

	minimum := fmt.Sprintf("%d.0.0", env.mgrMajor(t)+1)
	if err := env.SetPolicy(ctx, "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nmoduleChoices: [prometheus]\nimages:\n  minimumCephVersion: "+minimum+"\n"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.SetPolicy(ctx, ""); err != nil {
			t.Errorf("restoring the webhook's policy: %v", err)
		}
	})
	if out, err := env.kubectl(t, env.manifest(t, ns, "c", nil), "apply", "--dry-run=server", "-f", "-"); err == nil || !strings.Contains(out, "older than the policy's minimum "+minimum) {
		t.Fatalf("a new %s mgr under a minimum of %s: %v\n%s", env.mgrImage(), minimum, err, out)
	}

	for what, args := range map[string][]string{
		"label":            {"label", "-n", ns, "deployment/" + name, "team=storage"},
		"harmless spec":    {"patch", "-n", ns, "deployment/" + name, "-p", `{"spec":{"revisionHistoryLimit":5}}`},
		"modules override": {"annotate", "-n", ns, "deployment/" + name, contract.AnnotationModules + "=prometheus"},
	} {
		if out, err := env.kubectl(t, nil, args...); err != nil {
			t.Errorf("%s: %v\n%s", what, err, out)
		}
	}
	// The controller acts on the override and writes its status.
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		st := waitReady(t, ns, name)
		return len(st.Modules) == 1 && st.Modules[0] == "prometheus", nil
	})
	if err != nil {
		t.Errorf("the controller's status never followed the modules override under the tightened policy")
	}
	out, err := env.kubectl(t, nil, "set", "image", "-n", ns, "deployment/"+name, "mgr=quay.io/ceph/ceph:v16.2.14")
	if err == nil || !strings.Contains(out, "spec.template.spec.containers[0].image") {
		t.Errorf("an image change to another release below the minimum: %v\n%s", err, out)
	}
	if out, err := env.kubectl(t, nil, "annotate", "-n", ns, "deployment/"+name, contract.AnnotationModules+"-"); err != nil {
		t.Errorf("removing the override: %v\n%s", err, out)
	}
}

// TestNamespaceDeletionNeverWedged: a namespace holding a bootstrapped mgr
// whose cluster Secrets and ConfigMap are deleted first still goes away when
// deleted, within the controller's finalizer timeout and 30 s.
func TestNamespaceDeletionNeverWedged(t *testing.T) {
	ctx := t.Context()
	ns, name := env.Teardown, "rook-ceph-mgr-a"
	explainOnFailure(t, ns, name)
	apply(t, env.manifest(t, ns, "a", map[string]string{contract.AnnotationModules: "prometheus"}))
	waitReady(t, ns, name)

	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: contract.MonSecretName}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: contract.ConfigSecretName}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: contract.AdminKeyringSecretName}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: contract.ConfigMapName}},
	} {
		if err := env.Client.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if out, err := env.kubectl(t, nil, "delete", "namespace", ns, "--wait=false"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	limit := env.FinalizerTimeout + 30*time.Second
	err := wait.PollUntilContextTimeout(ctx, time.Second, limit, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})), nil
	})
	if err != nil {
		out, _ := env.kubectl(t, nil, "get", "namespace", ns, "-o", "yaml")
		dep, _ := env.kubectl(t, nil, "get", "deployment", "-n", ns, "-o", "yaml")
		t.Fatalf("namespace %s still there %s after its deletion:\n%s\n%s", ns, limit, out, dep)
	}
	t.Logf("namespace %s gone %s after kubectl delete (finalizer timeout %s)", ns, time.Since(start).Round(time.Second), env.FinalizerTimeout)
}

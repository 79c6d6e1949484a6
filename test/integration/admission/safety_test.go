// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// webhookCalls counts the admissions our webhooks answered, by webhook
// (mutate, validate, scale): a request the API server filtered out costs none.
func webhookCalls(t *testing.T, webhook string) float64 {
	t.Helper()
	sum, err := testenv.CounterSum("mgr_webhook_admissions_total", map[string]string{"webhook": webhook})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// liveCephCluster creates a Rook CephCluster, deleted when t ends.
func liveCephCluster(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	cc := &unstructured.Unstructured{}
	cc.SetAPIVersion("ceph.rook.io/v1")
	cc.SetKind("CephCluster")
	cc.SetNamespace(ns)
	cc.SetName(name)
	if err := k8s.Create(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), cc) })
	return cc
}

// webhookOutcomes is how many admissions webhook answered with outcome.
func webhookOutcomes(t *testing.T, webhook, outcome string) float64 {
	t.Helper()
	sum, err := testenv.CounterSum("mgr_webhook_admissions_total", map[string]string{"webhook": webhook, "outcome": outcome})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func patch(t *testing.T, d *appsv1.Deployment, edit func(d *appsv1.Deployment)) error {
	t.Helper()
	cur := getDeployment(t, d.Namespace, d.Name)
	p := client.MergeFrom(cur.DeepCopy())
	edit(cur)
	return k8s.Patch(context.Background(), cur, p)
}

func mustPatch(t *testing.T, d *appsv1.Deployment, what string, edit func(d *appsv1.Deployment)) {
	t.Helper()
	if err := patch(t, d, edit); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestCleanupNeverBlocked: once a namespace's cluster objects are gone (the
// cluster is being torn down), the controller's status and finalizer writes,
// a user's labels and the deletion itself all go through, and a spec change
// is still refused; the writes the controller makes reach no webhook at all.
func TestCleanupNeverBlocked(t *testing.T) {
	ctx := t.Context()
	d := example(t)
	d.Namespace = "ceph-teardown"
	d.Finalizers = []string{contract.FinalizerCephxKey}
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: contract.ConfigMapName}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: contract.ConfigSecretName}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: contract.AdminKeyringSecretName}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: contract.MonSecretName}},
	} {
		if err := k8s.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err := clusters.Lookup(d.Namespace)
		return err != nil, nil
	}); err != nil {
		t.Fatal("the webhook's cache still sees the deleted cluster objects")
	}

	mutateCalls := webhookCalls(t, "mutate")
	mustPatch(t, d, "the controller's status write", func(d *appsv1.Deployment) {
		metav1.SetMetaDataAnnotation(&d.ObjectMeta, contract.AnnotationBootstrapStatus, `{"phase":"CephUnavailable"}`)
	})
	mustPatch(t, d, "the deployment controller's revision", func(d *appsv1.Deployment) {
		metav1.SetMetaDataAnnotation(&d.ObjectMeta, contract.AnnotationDeploymentRevision, "2")
	})
	mustPatch(t, d, "an owner reference", func(d *appsv1.Deployment) {
		d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "something", UID: "0b5e8a43-2a3e-4d8e-9c59-5d4c8f0e8a11"}}
	})
	if m := webhookCalls(t, "mutate") - mutateCalls; m != 0 {
		t.Errorf("status, revision and owner writes made %v webhook calls; the matchConditions should have spared them", m)
	}
	mustPatch(t, d, "a user's label", func(d *appsv1.Deployment) { d.Labels["team"] = "storage" })
	err := patch(t, d, func(d *appsv1.Deployment) { d.Spec.Replicas = ptr[int32](0) })
	if err == nil || !strings.Contains(err.Error(), "metadata.namespace") || !strings.Contains(err.Error(), "not a Ceph cluster") {
		t.Errorf("a spec change in a namespace without its cluster: %v; want the missing cluster objects named", err)
	}

	if err := k8s.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	mutateCalls = webhookCalls(t, "mutate")
	mustPatch(t, d, "a label on a Deployment being deleted", func(d *appsv1.Deployment) { d.Labels["team"] = "gone" })
	mustPatch(t, d, "the finalizer's removal", func(d *appsv1.Deployment) { d.Finalizers = nil })
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Deployment is still there after its finalizer was removed: %v", err)
	}
	if m := webhookCalls(t, "mutate") - mutateCalls; m != 0 {
		t.Errorf("%v webhook calls for a Deployment being deleted", m)
	}
}

// TestOneDeploymentPerMgrID: a mgr Deployment must carry Rook's name for its
// id, so a second Deployment of mgr "a" is refused with the name it must have,
// and the API server itself refuses a second one of that name.
func TestOneDeploymentPerMgrID(t *testing.T) {
	ctx := t.Context()
	first := example(t)
	if err := k8s.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	defer deleteDeployment(t, first.Namespace, first.Name)

	second := example(t)
	second.Name = "another-mgr-a"
	err := k8s.Create(ctx, second)
	if err == nil {
		deleteDeployment(t, second.Namespace, second.Name)
		t.Fatal("a second Deployment of mgr a was admitted")
	}
	assertDenied(t, err, "metadata.name")
	if !strings.Contains(err.Error(), `must be named "rook-ceph-mgr-a"`) {
		t.Errorf("denial %q does not name the Deployment that holds mgr a", err)
	}
	if err := k8s.Create(ctx, example(t)); !apierrors.IsAlreadyExists(err) {
		t.Errorf("a second rook-ceph-mgr-a: %v, want AlreadyExists", err)
	}
}

// TestScaleSubresource: kubectl scale (and an HPA) goes through
// deployments/scale; a mgr stays at one replica there too, while scaling any
// other Deployment never reaches the webhook.
func TestScaleSubresource(t *testing.T) {
	ctx := t.Context()
	mgr := example(t)
	if err := k8s.Create(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	defer deleteDeployment(t, mgr.Namespace, mgr.Name)
	web := nonMgr("web", nil)
	namesake := nonMgr("rook-ceph-mgr-web", nil) // a mgr's name, not a mgr
	optedOut := example(t)                       // exempt by the policy
	optedOut.Name, optedOut.Labels[contract.LabelMgrID] = "rook-ceph-mgr-z", "z"
	optedOut.Labels[contract.LabelManaged] = "false"
	optedOut.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"mgr": "z"}}
	optedOut.Spec.Template.Labels = map[string]string{"mgr": "z"}
	for _, d := range []*appsv1.Deployment{web, namesake, optedOut} {
		if err := k8s.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		defer deleteDeployment(t, d.Namespace, d.Name)
	}
	// The webhook tells mgrs apart by its cache of mgr Deployments.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, ok := clusters.MgrDeployment(mgr.Namespace, mgr.Name)
		return ok, nil
	}); err != nil {
		t.Fatal("the webhook's cache never saw the mgr Deployment")
	}

	calls := webhookCalls(t, "scale")
	out, err := api.RunKubectl(t.Context(), nil, "scale", "-n", mgr.Namespace, "deployment/"+mgr.Name, "--replicas=3")
	if err == nil || !strings.Contains(out, "spec.replicas: Invalid value: 3") || !strings.Contains(out, "at most 1 pod") {
		t.Errorf("kubectl scale --replicas=3 of a mgr: %v\n%s\nwant a denial naming spec.replicas", err, out)
	}
	if r := *getDeployment(t, mgr.Namespace, mgr.Name).Spec.Replicas; r != 1 {
		t.Errorf("mgr replicas %d after the refused scale", r)
	}
	for _, n := range []string{"0", "1"} {
		if out, err := api.RunKubectl(t.Context(), nil, "scale", "-n", mgr.Namespace, "deployment/"+mgr.Name, "--replicas="+n); err != nil {
			t.Errorf("kubectl scale --replicas=%s of a mgr: %v\n%s", n, err, out)
		}
	}
	if got := webhookCalls(t, "scale") - calls; got != 1 {
		t.Errorf("%v scale webhook calls; want 1: scaling a mgr to 0 or 1 needs no call", got)
	}

	calls = webhookCalls(t, "scale")
	if out, err := api.RunKubectl(t.Context(), nil, "scale", "-n", web.Namespace, "deployment/web", "--replicas=3"); err != nil {
		t.Errorf("kubectl scale of a non-mgr Deployment: %v\n%s", err, out)
	}
	if got := webhookCalls(t, "scale") - calls; got != 0 {
		t.Errorf("scaling Deployment web reached the webhook %v times; a webhook outage would block it", got)
	}
	for _, name := range []string{namesake.Name, optedOut.Name} {
		if out, err := api.RunKubectl(t.Context(), nil, "scale", "-n", mgr.Namespace, "deployment/"+name, "--replicas=3"); err != nil {
			t.Errorf("kubectl scale of %s (not a mgr the policy governs): %v\n%s", name, err, out)
		}
	}
}

func nonMgr(name string, labels map[string]string) *appsv1.Deployment {
	l := map[string]string{"app": "web"}
	for k, v := range labels {
		l[k] = v
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "rook-ceph", Labels: l},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
}

// TestLeavingTheMgrSet: removing or changing label app on a mgr that holds
// the controller's finalizer would strand the finalizer (the controller sees
// only mgrs), so it is refused with the way out; without the finalizer it is
// the user's choice.
func TestLeavingTheMgrSet(t *testing.T) {
	ctx := t.Context()
	d := example(t)
	d.Finalizers = []string{contract.FinalizerCephxKey}
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	defer deleteDeployment(t, d.Namespace, d.Name)
	out, err := api.RunKubectl(t.Context(), nil, "label", "-n", d.Namespace, "deployment/"+d.Name, "app-")
	if err == nil || !strings.Contains(out, "metadata.labels[app]") || !strings.Contains(out, "exempt") {
		t.Errorf("kubectl label app-: %v\n%s\nwant a denial naming metadata.labels[app] and the exemption", err, out)
	}
	if err := patch(t, d, func(d *appsv1.Deployment) { d.Labels["app"] = "something-else" }); err == nil {
		t.Error("changing label app of a mgr holding the finalizer was admitted")
	} else {
		assertDenied(t, err, "metadata.labels[app]")
	}
	// Without the finalizer too: the Deployment would leave the policy
	// while it still runs the mgr.
	mustPatch(t, d, "removing the finalizer", func(d *appsv1.Deployment) { d.Finalizers = nil })
	if out, err := api.RunKubectl(t.Context(), nil, "label", "-n", d.Namespace, "deployment/"+d.Name, "app-"); err == nil || !strings.Contains(out, "metadata.labels[app]") {
		t.Errorf("kubectl label app- without the finalizer: %v\n%s\nwant a denial naming metadata.labels[app]", err, out)
	}
}

// TestRookAndOptedOutDeploymentsLeftAlone: a Deployment owned by a live Rook
// CephCluster, or one the policy exempts (labelled
// mgr.ceph.rook.io/managed=false), is stored exactly as the same Deployment
// in a namespace the webhooks never see (kube-system), on create and update:
// the webhooks are called (what decides is not the writer's to set) and
// patch nothing.
func TestRookAndOptedOutDeploymentsLeftAlone(t *testing.T) {
	ctx := t.Context()
	cc := liveCephCluster(t, "rook-ceph", "rook-ceph")

	rookMgr := func(ns string) *appsv1.Deployment {
		d := example(t)
		d.Namespace = ns
		d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: cc.GetName(), UID: cc.GetUID(),
			Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}
		d.Labels["rook_cluster"] = "rook-ceph"
		d.Spec.Replicas = ptr[int32](1)
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rook-ceph-mgr", "mgr": "a"}}
		d.Spec.Template.Labels = map[string]string{"app": "rook-ceph-mgr", "mgr": "a"}
		// Rook's own mounts, which our policy would refuse.
		addHostPath(d, "/var/lib/rook/exporter")
		d.Spec.Template.Spec.Containers[0].Args = []string{"--id=a", "--foreground"}
		return d
	}
	optedOut := func(ns string) *appsv1.Deployment {
		d := example(t)
		d.Namespace, d.Name = ns, "rook-ceph-mgr-legacy"
		d.Labels = map[string]string{"app": "rook-ceph-mgr", "mgr": "legacy", contract.LabelManaged: "false"}
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"mgr": "legacy"}}
		d.Spec.Template.Labels = map[string]string{"mgr": "legacy"}
		d.Spec.Template.Spec.Containers[0].Image = "registry.example.com/ceph:v15"
		return d
	}
	for name, build := range map[string]func(string) *appsv1.Deployment{"owned by a CephCluster": rookMgr, "exempt and opted out": optedOut} {
		t.Run(name, func(t *testing.T) {
			patched := webhookOutcomes(t, "mutate", "patched")
			d, twin := build("rook-ceph"), build("kube-system")
			for _, o := range []*appsv1.Deployment{d, twin} {
				if err := k8s.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
				defer deleteDeployment(t, o.Namespace, o.Name)
			}
			mustPatch(t, d, "a label", func(d *appsv1.Deployment) { d.Labels["team"] = "storage" })
			mustPatch(t, twin, "a label", func(d *appsv1.Deployment) { d.Labels["team"] = "storage" })
			got, want := getDeployment(t, d.Namespace, d.Name), getDeployment(t, twin.Namespace, twin.Name)
			if !equality.Semantic.DeepEqual(got.Spec, want.Spec) || !equality.Semantic.DeepEqual(got.Labels, want.Labels) ||
				!equality.Semantic.DeepEqual(got.Annotations, want.Annotations) || len(got.Finalizers) != 0 {
				t.Errorf("stored differently from the same Deployment in kube-system:\nspec %+v\nwant %+v", got.Spec, want.Spec)
			}
			if n := webhookOutcomes(t, "mutate", "patched") - patched; n != 0 {
				t.Errorf("%v patches; want none", n)
			}
		})
	}
}

// TestHiddenMgrRefused: a Deployment whose pod template runs a mgr (label
// app=rook-ceph-mgr) while its own labels do not say so would escape every
// selector of ours, and its pods would still be the cluster Services'. It is
// refused through the API server, naming the label to set, whatever
// CephCluster owner it claims, to a namespace editor; the same Deployment
// with its labels is completed as usual.
func TestHiddenMgrRefused(t *testing.T) {
	ctx := t.Context()
	alice := asEditor(t)
	cc := liveCephCluster(t, "rook-ceph", "rook-ceph-hidden")
	hidden := func(name string, edit func(*appsv1.Deployment)) *appsv1.Deployment {
		d := example(t)
		d.Name = name
		d.Labels = map[string]string{"team": "storage"}
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rook-ceph-mgr", "mgr": "a"}}
		d.Spec.Template.Labels = map[string]string{"app": "rook-ceph-mgr", "mgr": "a"}
		edit(d)
		return d
	}
	for name, d := range map[string]*appsv1.Deployment{
		"labels on the template only": hidden("rook-ceph-mgr-a", func(*appsv1.Deployment) {}),
		"under another name":          hidden("metrics-helper", func(*appsv1.Deployment) {}),
		"claiming a live CephCluster owner": hidden("rook-ceph-mgr-a", func(d *appsv1.Deployment) {
			d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: cc.GetName(), UID: cc.GetUID()}}
		}),
	} {
		t.Run(name, func(t *testing.T) {
			err := alice.Create(ctx, d)
			if err == nil {
				deleteDeployment(t, d.Namespace, d.Name)
				t.Fatal("admitted")
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.labels[app]") || !strings.Contains(err.Error(), "label the Deployment app=rook-ceph-mgr") {
				t.Errorf("refused, but not naming the label to set: %v", err)
			}
		})
	}
	t.Run("a Deployment that said so at first may not hide later", func(t *testing.T) {
		d := example(t)
		if err := k8s.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		defer deleteDeployment(t, d.Namespace, d.Name)
		if err := patch(t, d, func(d *appsv1.Deployment) { delete(d.Labels, "app") }); err == nil {
			t.Error("dropping app=rook-ceph-mgr from a mgr's own labels was admitted")
		}
	})
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rook-mgr/mgr-webhook/contract"
)

func ptr[T any](v T) *T { return &v }

// TestPolicyDenialsThroughAPIServer sends one bad Deployment per rule through
// the API server; each must be refused by our webhooks with its field named.
func TestPolicyDenialsThroughAPIServer(t *testing.T) {
	cases := map[string]struct {
		edit      func(d *appsv1.Deployment)
		wantField string
	}{
		"two replicas": {func(d *appsv1.Deployment) { d.Spec.Replicas = ptr[int32](2) }, "spec.replicas"},
		"foreign registry": {func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Image = "registry.example.com/ceph:v16.2.15"
		}, "spec.template.spec.containers[0].image"},
		"release below mimic": {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "quay.io/ceph/ceph:v12.2.13" }, "spec.template.spec.containers[0].image"},
		"latest tag":          {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "quay.io/ceph/ceph:latest" }, "spec.template.spec.containers[0].image"},
		"privileged": {func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
		}, "spec.template.spec.containers[0].securityContext.privileged"},
		"hostNetwork":          {func(d *appsv1.Deployment) { d.Spec.Template.Spec.HostNetwork = true }, "spec.template.spec.hostNetwork"},
		"hostPath outside log": {func(d *appsv1.Deployment) { addHostPath(d, "/etc") }, "spec.template.spec.volumes[0].hostPath.path"},
		"fsid of another cluster": {func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Args = []string{"--fsid=47913c99-d1ed-4a9b-bd55-2b49490b1229"}
		}, "spec.template.spec.containers[0].args[0]"},
		"--id of another mgr": {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Args = []string{"--id=b"} }, "spec.template.spec.containers[0].args[8]"},
		"keyring of another mgr": {func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "rook-ceph-mgr-a-keyring", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "rook-ceph-mgr-b-keyring"}}}}
		}, "spec.template.spec.volumes[0].secret.secretName"},
		"template label of another mgr": {func(d *appsv1.Deployment) {
			d.Spec.Template.Labels = map[string]string{"app": "rook-ceph-mgr", "mgr": "b"}
			d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rook-ceph-mgr"}}
		}, "spec.template.metadata.labels[mgr]"},
		"selector without the mgr id": {func(d *appsv1.Deployment) {
			d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rook-ceph-mgr"}}
		}, "spec.selector.matchLabels[mgr]"},
		"mgr id not a DNS label": {func(d *appsv1.Deployment) { d.Labels["mgr"] = "A_1" }, "metadata.labels[mgr]"},
		"mgr id missing":         {func(d *appsv1.Deployment) { delete(d.Labels, "mgr") }, "metadata.labels[mgr]"},
		"unknown sidecar": {func(d *appsv1.Deployment) {
			d.Annotations = map[string]string{contract.AnnotationInjectSidecars: "log-collector"}
		}, "metadata.annotations[mgr.ceph.rook.io/inject-sidecars]"},
		"container not named mgr": {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Name = "ceph-mgr" }, "spec.template.spec.containers"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := example(t)
			d.Name = "bad-" + strings.ToLower(strings.ReplaceAll(strings.ReplaceAll(name, " ", "-"), "--", ""))
			tc.edit(d)
			err := k8s.Create(t.Context(), d)
			if err == nil {
				deleteDeployment(t, d.Namespace, d.Name)
				t.Fatalf("admitted; want a denial naming %s", tc.wantField)
			}
			assertDenied(t, err, tc.wantField)
		})
	}
}

func assertDenied(t *testing.T, err error, field string) {
	t.Helper()
	msg := err.Error()
	if !strings.Contains(msg, "mgr.ceph.rook.io\" denied the request") || !strings.Contains(msg, field) {
		t.Errorf("error %q\nwant our webhook's denial naming %s", msg, field)
	}
	if !apierrors.IsInvalid(err) {
		t.Errorf("want an Invalid (422) status, got %v", apierrors.ReasonForError(err))
	}
}

func addHostPath(d *appsv1.Deployment, path string) {
	d.Spec.Template.Spec.Volumes = append(d.Spec.Template.Spec.Volumes, corev1.Volume{Name: "host",
		VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}})
}

func TestImmutableOnUpdate(t *testing.T) {
	ctx := t.Context()
	d := example(t)
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	defer deleteDeployment(t, d.Namespace, d.Name)

	for name, tc := range map[string]struct {
		edit  func(d *appsv1.Deployment)
		field string
	}{
		"mgr id": {func(d *appsv1.Deployment) { d.Labels["mgr"] = "b" }, "metadata.labels[mgr]"},
		"fsid": {func(d *appsv1.Deployment) {
			c := &d.Spec.Template.Spec.Containers[0]
			c.Args[0] = "--fsid=47913c99-d1ed-4a9b-bd55-2b49490b1229"
		}, "spec.template.spec.containers[mgr].args"},
	} {
		t.Run(name, func(t *testing.T) {
			cur := getDeployment(t, d.Namespace, d.Name)
			tc.edit(cur)
			assertDenied(t, k8s.Update(ctx, cur), tc.field)
		})
	}
}

func TestNonMgrDeploymentUntouched(t *testing.T) {
	ctx := t.Context()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "rook-ceph", Labels: map[string]string{"app": "web"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	defer deleteDeployment(t, d.Namespace, d.Name)
	got := getDeployment(t, d.Namespace, d.Name)
	c := got.Spec.Template.Spec.Containers
	if len(c) != 1 || len(c[0].Args) != 0 || len(c[0].Env) != 0 || len(got.Spec.Template.Spec.InitContainers) != 0 ||
		got.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || len(got.Labels) != 1 {
		t.Errorf("a non-mgr Deployment was changed: %+v", got.Spec)
	}
}

func TestNamespaceWithoutClusterIsRefused(t *testing.T) {
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "not-ceph"}}
	if err := k8s.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	d := example(t)
	d.Namespace = ns.Name
	err := k8s.Create(ctx, d)
	if err == nil {
		t.Fatal("a mgr in a namespace without a Ceph cluster was admitted")
	}
	for _, want := range []string{"metadata.namespace", `Secret "rook-ceph-config"`, `ConfigMap "rook-ceph-config" (key ceph.conf, with fsid`, "create them"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("denial %q does not mention %s", err, want)
		}
	}
}

// TestKubectlDryRunAndDenialOutput checks what a user sees: --dry-run=server
// shows the completed object without storing it, and a denial names the field.
func TestKubectlDryRunAndDenialOutput(t *testing.T) {
	out, err := api.RunKubectl(t.Context(), nil, "apply", "--dry-run=server", "-o", "yaml", "-f", exampleFile())
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	for _, want := range []string{"ceph-mgr", "init-set-dashboard-server-addr", "--id=a", "rook-ceph-mgr-a-keyring"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry-run output lacks %q", want)
		}
	}
	if out, err := api.RunKubectl(t.Context(), nil, "get", "deployment", "-n", "rook-ceph", "rook-ceph-mgr-a"); err == nil {
		t.Errorf("dry run stored the object:\n%s", out)
	}

	bad := strings.Replace(string(must(os.ReadFile(exampleFile()))), "spec:\n", "spec:\n  replicas: 3\n", 1)
	out, err = api.RunKubectl(t.Context(), []byte(bad), "apply", "-f", "-")
	if err == nil {
		t.Fatalf("replicas 3 admitted:\n%s", out)
	}
	if !strings.Contains(out, "spec.replicas: Invalid value: 3") || !strings.Contains(out, "at most 1") {
		t.Errorf("kubectl shows:\n%s\nwant the field and the fix", out)
	}
}

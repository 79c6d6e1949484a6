// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// editor is a namespace editor of rook-ceph: the built-in edit ClusterRole's
// rules bound in that namespace only, the people the policy constrains. The
// bindings name system:aggregate-to-edit and -view, which hold them: edit is
// filled by kube-controller-manager's aggregation controller, which this API
// server runs without.
const editor = "alice@example.com"

func asEditor(t *testing.T) client.Client {
	t.Helper()
	ctx := t.Context()
	for _, role := range []string{"system:aggregate-to-edit", "system:aggregate-to-view"} {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "alice-" + strings.TrimPrefix(role, "system:"), Namespace: "rook-ceph"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: editor}},
		}
		if err := k8s.Create(ctx, rb); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(api.ConfigAs(editor), client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestEditorCannotLeaveThePolicy: impersonating a namespace editor, no path
// stores a mgr Deployment that breaks the policy: not the opt-out label (at
// create, or on update alone or with a spec change), not a CephCluster owner
// reference (only Rook's operator writes those), not removing label app, not another
// name or another mgr's id, not the scale subresource. Each refusal names the
// field, and the stored mgr is as it was.
func TestEditorCannotLeaveThePolicy(t *testing.T) {
	ctx := t.Context()
	alice := asEditor(t)
	forgedOwner := []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: "rook-ceph", UID: "0d2c7f43-no-such-cluster"}}
	privileged := func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
	}

	creates := map[string]struct {
		edit  func(d *appsv1.Deployment)
		field string
	}{
		"opt-out label, 3 replicas, privileged": {func(d *appsv1.Deployment) {
			d.Labels[contract.LabelManaged] = "false"
			d.Spec.Replicas = ptr[int32](3)
			privileged(d)
		}, "metadata.labels[mgr.ceph.rook.io/managed]"},
		"forged CephCluster owner, foreign image": {func(d *appsv1.Deployment) {
			d.OwnerReferences = forgedOwner
			d.Spec.Template.Spec.Containers[0].Image = "registry.example.com/ceph:v19.2.0"
		}, "metadata.ownerReferences[0]"},
		"forged CephCluster owner, hostPath /": {func(d *appsv1.Deployment) {
			d.OwnerReferences = forgedOwner
			addHostPath(d, "/")
		}, "metadata.ownerReferences[0]"},
		"another name for mgr a": {func(d *appsv1.Deployment) { d.Name = "rook-ceph-mgr-a2" }, "metadata.name"},
		"another mgr's id":       {func(d *appsv1.Deployment) { d.Name, d.Labels["mgr"] = "rook-ceph-mgr-q", "a" }, "metadata.name"},
	}
	for name, tc := range creates {
		t.Run("create: "+name, func(t *testing.T) {
			d := example(t)
			tc.edit(d)
			err := alice.Create(ctx, d)
			if err == nil {
				deleteDeployment(t, d.Namespace, d.Name)
				t.Fatal("admitted")
			}
			assertDenied(t, err, tc.field)
		})
	}

	// A live CephCluster of the namespace, whose UID any reader may see.
	cc := liveCephCluster(t, "rook-ceph", "rook-ceph-live")
	liveOwner := []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: cc.GetName(), UID: cc.GetUID()}}

	mgr := example(t)
	if err := alice.Create(ctx, mgr); err != nil {
		t.Fatalf("the editor's minimal mgr: %v", err)
	}
	defer deleteDeployment(t, mgr.Namespace, mgr.Name)
	updates := map[string]struct {
		edit  func(d *appsv1.Deployment)
		field string
	}{
		"opt-out label alone": {func(d *appsv1.Deployment) { d.Labels[contract.LabelManaged] = "false" }, "metadata.labels[mgr.ceph.rook.io/managed]"},
		"opt-out label, 3 replicas, privileged": {func(d *appsv1.Deployment) {
			d.Labels[contract.LabelManaged] = "false"
			d.Spec.Replicas = ptr[int32](3)
			privileged(d)
		}, "spec.replicas"},
		"forged CephCluster owner, 2 replicas": {func(d *appsv1.Deployment) {
			d.OwnerReferences = forgedOwner
			d.Spec.Replicas = ptr[int32](2)
		}, "metadata.ownerReferences[0]"},
		"live CephCluster owner added, 2 replicas": {func(d *appsv1.Deployment) {
			d.OwnerReferences = liveOwner
			d.Spec.Replicas = ptr[int32](2)
		}, "metadata.ownerReferences[0]"},
		"live CephCluster owner added, image": {func(d *appsv1.Deployment) {
			d.OwnerReferences = liveOwner
			d.Spec.Template.Spec.Containers[0].Image = "registry.example.com/ceph:v19.2.0"
		}, "metadata.ownerReferences[0]"},
		"label app removed":                  {func(d *appsv1.Deployment) { delete(d.Labels, contract.LabelApp) }, "metadata.labels[app]"},
		"label app removed, then privileged": {func(d *appsv1.Deployment) { delete(d.Labels, contract.LabelApp); privileged(d) }, "metadata.labels[app]"},
		// The modules are the whole Ceph cluster's: the policy offers no choice.
		"the cluster's modules chosen by annotation": {func(d *appsv1.Deployment) {
			metav1.SetMetaDataAnnotation(&d.ObjectMeta, contract.AnnotationModules, "nfs,restful")
		}, "metadata.annotations[mgr.ceph.rook.io/modules]"},
	}
	for name, tc := range updates {
		t.Run("update: "+name, func(t *testing.T) {
			cur := getDeployment(t, mgr.Namespace, mgr.Name)
			p := client.MergeFrom(cur.DeepCopy())
			tc.edit(cur)
			err := alice.Patch(ctx, cur, p)
			if err == nil {
				t.Fatal("admitted")
			}
			assertDenied(t, err, tc.field)
			assertUntouched(t, mgr)
		})
	}

	// The issue's own command line, through kubectl as the editor.
	t.Run("kubectl patch: opt out, 3 replicas, privileged", func(t *testing.T) {
		out, err := api.RunKubectl(t.Context(), nil, "--as", editor, "patch", "-n", mgr.Namespace, "deployment/"+mgr.Name, "--type=strategic", "-p",
			`{"metadata":{"labels":{"mgr.ceph.rook.io/managed":"false"}},"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"mgr","securityContext":{"privileged":true}}]}}}}`)
		if err == nil || !strings.Contains(out, "spec.replicas") || !strings.Contains(out, "privileged") || !strings.Contains(out, contract.LabelManaged) {
			t.Errorf("%v\n%s\nwant a denial naming spec.replicas, privileged and the opt-out label", err, out)
		}
		assertUntouched(t, mgr)
	})
	t.Run("kubectl scale to 3", func(t *testing.T) {
		if out, err := api.RunKubectl(t.Context(), nil, "--as", editor, "scale", "-n", mgr.Namespace, "deployment/"+mgr.Name, "--replicas=3"); err == nil || !strings.Contains(out, "spec.replicas") {
			t.Errorf("%v\n%s\nwant a denial naming spec.replicas", err, out)
		}
		assertUntouched(t, mgr)
	})
}

// assertUntouched: the stored mgr still runs one unprivileged pod, opted
// into the policy.
func assertUntouched(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	got := getDeployment(t, d.Namespace, d.Name)
	if r := got.Spec.Replicas; r == nil || *r != 1 {
		t.Errorf("replicas %v after the refusal", r)
	}
	if _, ok := got.Labels[contract.LabelManaged]; ok || got.Labels[contract.LabelApp] != contract.AppName || len(got.OwnerReferences) != 0 {
		t.Errorf("labels %v, owners %v after the refusal", got.Labels, got.OwnerReferences)
	}
	for _, c := range got.Spec.Template.Spec.Containers {
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			t.Errorf("container %s privileged after the refusal", c.Name)
		}
	}
}

// rookOperator is Rook's operator as the default policy names it, with the
// Deployment rights Rook's own ClusterRole gives it in rook-ceph.
const rookOperator = "system:serviceaccount:rook-ceph:rook-ceph-system"

func asRookOperator(t *testing.T) client.Client {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "rook-operator-deployments", Namespace: "rook-ceph"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "rook-operator-deployments", Namespace: "rook-ceph"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "rook-ceph", Name: "rook-ceph-system"}}}
	for _, o := range []client.Object{role, rb} {
		if err := k8s.Create(ctx, o); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(api.ConfigAs(rookOperator), client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOnlyRookWritesItsMgrs: through the API server, a mgr Deployment that
// names the namespace's live CephCluster is Rook's only when Rook's
// operator wrote its pods. Rook's operator creates and changes its mgr,
// stored as written (a mount our policy refuses included). A namespace
// editor cannot create another with that owner, nor change the pods of
// Rook's (image, privilege, pod labels), each refusal naming the owner
// reference and Rook's operator, the stored mgr as Rook wrote it; the
// editor may still label, scale and `kubectl rollout restart` it.
func TestOnlyRookWritesItsMgrs(t *testing.T) {
	ctx := t.Context()
	alice, rook := asEditor(t), asRookOperator(t)
	cc := liveCephCluster(t, "rook-ceph", "rook-ceph-rookwrites")
	owner := []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: cc.GetName(), UID: cc.GetUID(),
		Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}
	rookMgr := func(id string) *appsv1.Deployment {
		d := example(t)
		d.Name, d.Labels["mgr"] = "rook-ceph-mgr-"+id, id
		d.OwnerReferences = owner
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rook-ceph-mgr", "mgr": id}}
		d.Spec.Template.Labels = map[string]string{"app": "rook-ceph-mgr", "mgr": id}
		addHostPath(d, "/var/lib/rook/exporter") // Rook's, which our policy refuses
		return d
	}
	patched := webhookOutcomes(t, "mutate", "patched")
	mine := rookMgr("r")
	if err := rook.Create(ctx, mine); err != nil {
		t.Fatalf("Rook's operator creating its mgr: %v", err)
	}
	defer deleteDeployment(t, mine.Namespace, mine.Name)
	if err := patchAs(rook, mine, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "quay.io/ceph/ceph:v19.2.3" }); err != nil {
		t.Fatalf("Rook's operator changing its mgr's image: %v", err)
	}
	if n := webhookOutcomes(t, "mutate", "patched") - patched; n != 0 {
		t.Errorf("%v patches of Rook's mgr; want none", n)
	}
	stored := getDeployment(t, mine.Namespace, mine.Name)
	if img := stored.Spec.Template.Spec.Containers[0].Image; img != "quay.io/ceph/ceph:v19.2.3" || len(stored.Spec.Template.Spec.Volumes) != 1 {
		t.Fatalf("Rook's mgr stored as image %s, volumes %v; want Rook's as written", img, stored.Spec.Template.Spec.Volumes)
	}

	t.Run("an editor creating a mgr with the live owner", func(t *testing.T) {
		d := rookMgr("e")
		err := alice.Create(ctx, d)
		if err == nil {
			deleteDeployment(t, d.Namespace, d.Name)
			t.Fatal("admitted")
		}
		assertDenied(t, err, "metadata.ownerReferences[0]: Forbidden: only Rook's operator ("+rookOperator+")")
	})
	for name, edit := range map[string]func(*appsv1.Deployment){
		"image": func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "registry.example.com/evil:1" },
		"privileged": func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
		},
		"pod labels": func(d *appsv1.Deployment) { d.Spec.Template.Labels["mgr_role"] = "active" },
	} {
		t.Run("an editor changing the "+name+" of Rook's mgr", func(t *testing.T) {
			err := patchAs(alice, mine, edit)
			if err == nil {
				t.Fatal("admitted")
			}
			assertDenied(t, err, "metadata.ownerReferences[0]: Forbidden: only Rook's operator ("+rookOperator+")")
			if got := getDeployment(t, mine.Namespace, mine.Name); !equality.Semantic.DeepEqual(got.Spec.Template, stored.Spec.Template) {
				t.Errorf("pod template changed after the refusal:\n%+v\nwant\n%+v", got.Spec.Template, stored.Spec.Template)
			}
		})
	}
	t.Run("an editor labelling and scaling Rook's mgr", func(t *testing.T) {
		if err := patchAs(alice, mine, func(d *appsv1.Deployment) { d.Labels["team"] = "storage"; d.Spec.Replicas = ptr[int32](0) }); err != nil {
			t.Error(err)
		}
	})
	t.Run("an editor restarting Rook's mgr", func(t *testing.T) {
		if out, err := api.RunKubectl(t.Context(), nil, "--as", editor, "rollout", "restart", "-n", mine.Namespace, "deployment/"+mine.Name); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
		got := getDeployment(t, mine.Namespace, mine.Name)
		if _, ok := got.Spec.Template.Annotations[contract.AnnotationRestartedAt]; !ok {
			t.Errorf("no %s on the pod template after the restart", contract.AnnotationRestartedAt)
		}
	})
}

// patchAs reads d afresh and merge-patches it as c with edit.
func patchAs(c client.Client, d *appsv1.Deployment, edit func(*appsv1.Deployment)) error {
	cur := &appsv1.Deployment{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(d), cur); err != nil {
		return err
	}
	p := client.MergeFrom(cur.DeepCopy())
	edit(cur)
	return c.Patch(context.Background(), cur, p)
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package policycheck

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

// TestOnlyRookWritesItsMgrs: the shipped policy, with no webhook in the
// path, refuses what Go's ValidateRookWriter refuses, as the same users:
// a namespace editor may not create a mgr Deployment with a CephCluster
// owner, give a mgr one or change the pods of one that has it; Rook's
// operator (the policy's, renamed too) may; labels, replicas and a
// rollout restart stay the editor's. Each refusal names the owner
// reference and the operator, as Go's does.
func TestOnlyRookWritesItsMgrs(t *testing.T) {
	ctx := t.Context()
	const editor = "bob@example.com"
	users := map[string]string{"editor": editor, "Rook": "system:serviceaccount:rook-ceph:rook-ceph-system",
		"renamed Rook": "system:serviceaccount:rook-system:rook-operator"}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "deployments", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "create", "update", "patch"}}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deployments", Namespace: ns},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}}
	for _, u := range users {
		rb.Subjects = append(rb.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: u})
	}
	for _, o := range []client.Object{role, rb} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	as := map[string]client.Client{}
	for who, u := range users {
		c, err := client.New(api.ConfigAs(u), client.Options{Scheme: k8s.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		as[who] = c
	}

	// Rook's mgr, stored by an administrator (system:masters writes it too).
	rooks := completedMgr(t, "r")
	rooks.OwnerReferences = rookOwner()
	// A mgr the policy governs.
	governed := completedMgr(t, "g")
	setPolicy(t, []byte(`{}`))
	for _, d := range []*appsv1.Deployment{rooks, governed} {
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
			return k8s.Create(ctx, d) == nil, nil
		}); err != nil {
			t.Fatalf("storing %s: %v", d.Name, k8s.Create(ctx, d))
		}
		defer k8s.Delete(ctx, d)
	}

	withOwner := func(d *appsv1.Deployment) { d.OwnerReferences = rookOwner() }
	cases := map[string]struct {
		policy string
		who    string
		old    *appsv1.Deployment // nil: a create of a new mgr
		edit   func(d *appsv1.Deployment)
	}{
		"an editor creates one":            {who: "editor", edit: withOwner},
		"Rook creates one":                 {who: "Rook", edit: withOwner},
		"a renamed Rook creates one":       {policy: `{"rook": {"operatorNamespace": "rook-system", "operatorServiceAccount": "rook-operator"}}`, who: "renamed Rook", edit: withOwner},
		"the default Rook, renamed policy": {policy: `{"rook": {"operatorNamespace": "rook-system", "operatorServiceAccount": "rook-operator"}}`, who: "Rook", edit: withOwner},
		"an editor gives a mgr the owner": {who: "editor", old: governed, edit: func(d *appsv1.Deployment) {
			withOwner(d)
			d.Labels["team"] = "storage"
		}},
		"an editor changes the image": {who: "editor", old: rooks, edit: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Image = "registry.example.com/evil:1"
		}},
		"an editor makes it privileged": {who: "editor", old: rooks, edit: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
		}},
		"an editor changes a pod annotation": {who: "editor", old: rooks, edit: func(d *appsv1.Deployment) {
			metav1.SetMetaDataAnnotation(&d.Spec.Template.ObjectMeta, "team", "x")
		}},
		"an editor labels and scales it": {who: "editor", old: rooks, edit: func(d *appsv1.Deployment) {
			d.Labels["team"] = "storage"
			d.Spec.Replicas = ptr(int32(0))
		}},
		"an editor restarts it": {who: "editor", old: rooks, edit: func(d *appsv1.Deployment) {
			metav1.SetMetaDataAnnotation(&d.Spec.Template.ObjectMeta, contract.AnnotationRestartedAt, "2026-12-06T09:00:00Z")
		}},
		"Rook changes the image": {who: "Rook", old: rooks, edit: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Image = "quay.io/ceph/ceph:v19.2.3"
		}},
	}
	byPolicy := map[string][]string{}
	for name, tc := range cases {
		byPolicy[tc.policy] = append(byPolicy[tc.policy], name)
	}
	for spec, names := range byPolicy {
		if spec == "" {
			spec = `{}`
		}
		p := setPolicy(t, []byte(spec))
		for _, name := range names {
			tc := cases[name]
			t.Run(name, func(t *testing.T) {
				var old, d *appsv1.Deployment
				if tc.old == nil {
					d = completedMgr(t, "n")
				} else {
					old = &appsv1.Deployment{}
					if err := k8s.Get(ctx, client.ObjectKeyFromObject(tc.old), old); err != nil {
						t.Fatal(err)
					}
					d = old.DeepCopy()
				}
				tc.edit(d)
				goErrs := mutate.ValidateRookWriter(old, d, p, users[tc.who], nil)
				write := func() error {
					if old == nil {
						return as[tc.who].Create(ctx, d.DeepCopy(), client.DryRunAll)
					}
					return as[tc.who].Update(ctx, d.DeepCopy(), client.DryRunAll)
				}
				var got error
				if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
					got = write()
					return (got != nil) == (len(goErrs) > 0), nil
				}); err != nil {
					t.Fatalf("Go: %v; the policy: %v", goErrs, got)
				}
				if got == nil {
					return
				}
				if !strings.Contains(got.Error(), "ValidatingAdmissionPolicy 'mgr-policy'") || !apierrors.IsInvalid(got) {
					t.Fatalf("not the policy's Invalid denial: %v", got)
				}
				if want := goErrs[0].Error(); !strings.Contains(got.Error(), want) {
					t.Errorf("the policy says\n%v\nGo says\n%s", got, want)
				}
			})
		}
	}
}

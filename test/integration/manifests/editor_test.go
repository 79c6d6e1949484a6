// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/test/internal/await"
)

// TestCephNamespaceEditorHoldsNoKey: the shipped example role for a Ceph
// namespace's editors (manifests/examples/ceph-namespace-editor.yaml), bound
// in rook-ceph, writes mgr Deployments and reads their pods and Events, and
// reaches no key: no Secret of the namespace (the admin keyring, a mgr's
// keyring), no exec or attach into a mgr pod that mounts one, no pod it
// could mount one in. The API server's own authorizer answers each
// question (SubjectAccessReview).
func TestCephNamespaceEditorHoldsNoKey(t *testing.T) {
	ctx := t.Context()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "manifests", "examples", "ceph-namespace-editor.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		t.Fatal(err)
	}
	api, err := testenv.StartForInstalls("rook-ceph")
	if err != nil {
		t.Fatal(err)
	}
	defer api.Stop()
	if err := api.Client.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := api.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "storage-team"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: "storage-team"}}}); err != nil {
		t.Fatal(err)
	}
	may := func(verb, group, resource, sub, name string) bool {
		t.Helper()
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "sam", Groups: []string{"storage-team"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "rook-ceph", Verb: verb, Group: group, Resource: resource, Subresource: sub, Name: name}}}
		if err := api.Client.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		return sar.Status.Allowed
	}
	// The authorizer learns the role and its binding from its informers, a
	// moment after their creation: ask once the first grant is in force.
	await.For(t, 30*time.Second, "the storage-team binding in force", func() bool { return may("create", "apps", "deployments", "", "") })
	for _, q := range []struct {
		verb, group, resource, sub, name string
		want                             bool
	}{
		{"create", "apps", "deployments", "", "", true},
		{"patch", "apps", "deployments", "", "rook-ceph-mgr-a", true},
		{"update", "apps", "deployments", "scale", "rook-ceph-mgr-a", true},
		{"get", "", "pods", "log", "rook-ceph-mgr-a-5d8f-x", true},
		{"list", "events.k8s.io", "events", "", "", true},
		{"get", "", "secrets", "", "rook-ceph-admin-keyring", false},
		{"get", "", "secrets", "", "rook-ceph-mgr-a-keyring", false},
		{"list", "", "secrets", "", "", false},
		{"watch", "", "secrets", "", "", false},
		{"create", "", "secrets", "", "", false},
		{"create", "", "pods", "exec", "rook-ceph-mgr-a-5d8f-x", false},
		{"create", "", "pods", "attach", "rook-ceph-mgr-a-5d8f-x", false},
		{"create", "", "pods", "", "", false},
		{"create", "", "pods", "ephemeralcontainers", "rook-ceph-mgr-a-5d8f-x", false},
		{"patch", "", "pods", "ephemeralcontainers", "rook-ceph-mgr-a-5d8f-x", false},
		{"create", "apps", "replicasets", "", "", false},
		{"create", "batch", "jobs", "", "", false},
		{"create", "", "serviceaccounts", "token", "default", false},
		{"update", "mgr.ceph.rook.io", "mgrpolicies", "", "default", false},
	} {
		what := q.verb + " " + q.resource
		if q.sub != "" {
			what += "/" + q.sub
		}
		if got := may(q.verb, q.group, q.resource, q.sub, q.name); got != q.want {
			t.Errorf("%s %s: allowed %v, want %v", what, q.name, got, q.want)
		}
	}
}

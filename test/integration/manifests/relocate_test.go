// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/certs"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// TestOverlayInAnotherNamespace runs the README's kustomization, which installs
// into another namespace by its `namespace:` line, in both certificate modes:
// every reference to the namespace follows (nothing says mgr-webhook-system),
// the build server-dry-runs, and the RoleBindings bind the ServiceAccounts of
// the new namespace.
func TestOverlayInAnotherNamespace(t *testing.T) {
	block, err := testenv.READMEKustomization("kustomize-overlay")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Namespace string `json:"namespace"`
	}
	if err := yaml.Unmarshal([]byte(block), &k); err != nil || k.Namespace == "" || k.Namespace == "mgr-webhook-system" {
		t.Fatalf("the README's overlay sets namespace %q (%v), want another namespace", k.Namespace, err)
	}
	ns := k.Namespace
	api, err := testenv.StartForInstalls(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer api.Stop()
	for _, mode := range []string{"cert-manager", "self-signed"} {
		t.Run(mode, func(t *testing.T) {
			// The overlay lives in the checkout and points at it instead of GitHub.
			overlay := strings.ReplaceAll(block, "overlays/cert-manager", "overlays/"+mode)
			dir, err := testenv.KustomizationInCheckout(overlay)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			path, objs := buildDir(t, dir)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(data), "\n") {
				if strings.Contains(line, "mgr-webhook-system") {
					t.Errorf("line %d still names the default namespace: %s", i+1, strings.TrimSpace(line))
				}
			}
			checkNamespaceReferences(t, objs, ns, mode)

			out, err := exec.Command(api.Kubectl, "--kubeconfig", api.Kubeconfig, "apply", "--dry-run=server", "-f", path).CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, out)
			}
			if n := strings.Count(string(out), "(server dry run)"); n != len(objs) {
				t.Errorf("%d of %d objects applied:\n%s", n, len(objs), out)
			}
			if _, err := testenv.ApplyRBAC(context.Background(), api.Client, dir); err != nil {
				t.Fatal(err)
			}
			for _, sa := range []string{"mgr-webhook", "mgr-bootstrap"} {
				as := testenv.ServiceAccountUser(ns, sa)
				// The webhook elects a leader only to rotate certificates.
				if sa == "mgr-bootstrap" || mode == "self-signed" {
					out, err := exec.Command(api.Kubectl, "--kubeconfig", api.Kubeconfig, "auth", "can-i", "-n", ns, "--as", as, "create", "leases.coordination.k8s.io").CombinedOutput()
					if err != nil || strings.TrimSpace(string(out)) != "yes" {
						t.Errorf("%s may not take its leader lease in %s: %s", as, ns, out)
					}
				}
				out, err := exec.Command(api.Kubectl, "--kubeconfig", api.Kubeconfig, "auth", "can-i", "-n", "rook-ceph", "--as", as, "list", "deployments.apps").CombinedOutput()
				if err != nil || strings.TrimSpace(string(out)) != "yes" {
					t.Errorf("%s may not list the mgr Deployments: %s", as, out)
				}
			}
		})
	}
}

// checkNamespaceReferences: every field that names the install namespace
// names ns.
func checkNamespaceReferences(t *testing.T, objs objects, ns, mode string) {
	t.Helper()
	clusterScoped := []string{"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
	for key, doc := range objs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatal(err)
		}
		switch kind := u.GetKind(); {
		case kind == "Namespace":
			if u.GetName() != ns {
				t.Errorf("%s: want Namespace %s", key, ns)
			}
		case kind == "RoleBinding" && strings.HasSuffix(u.GetName(), "-ceph"):
			// The Ceph namespace's binding stays there (follow-ceph-namespace).
			if u.GetNamespace() != testenv.DefaultCephNamespace {
				t.Errorf("%s in namespace %q, want the Ceph namespace %s", key, u.GetNamespace(), testenv.DefaultCephNamespace)
			}
		case !slices.Contains(clusterScoped, kind) && u.GetNamespace() != ns:
			t.Errorf("%s in namespace %q, want %s", key, u.GetNamespace(), ns)
		}
		subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
		for _, s := range subjects {
			s := s.(map[string]any)
			if s["kind"] == "ServiceAccount" && s["namespace"] != ns {
				t.Errorf("%s: subject %v", key, s)
			}
		}
		hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		for _, h := range hooks {
			h := h.(map[string]any)
			if got, _, _ := unstructured.NestedString(h, "clientConfig", "service", "namespace"); got != ns {
				t.Errorf("%s %s: clientConfig.service.namespace %q", key, h["name"], got)
			}
			exprs, _, _ := unstructured.NestedSlice(h, "namespaceSelector", "matchExpressions")
			excluded := false
			for _, e := range exprs {
				e := e.(map[string]any)
				values, _, _ := unstructured.NestedStringSlice(e, "values")
				excluded = excluded || e["operator"] == "NotIn" && slices.Contains(values, ns) && slices.Contains(values, "kube-system")
			}
			if !excluded {
				t.Errorf("%s %s: namespaceSelector %v does not exclude %s and kube-system", key, h["name"], exprs, ns)
			}
		}
		if mode != "cert-manager" {
			continue
		}
		if strings.HasSuffix(u.GetKind(), "WebhookConfiguration") {
			if got := u.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != ns+"/mgr-webhook-serving" {
				t.Errorf("%s: inject-ca-from %q", key, got)
			}
		}
		if key == "Certificate/mgr-webhook-serving" {
			got, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "dnsNames")
			if want := certs.ServiceHosts("mgr-webhook", ns).DNSNames; !slices.Equal(got, want) {
				t.Errorf("Certificate dnsNames %v, want the Service's %v", got, want)
			}
		}
	}
	if _, ok := objs["Certificate/mgr-webhook-serving"]; ok != (mode == "cert-manager") {
		t.Errorf("%s: serving Certificate present: %v", mode, ok)
	}
}

// TestRelocationLeavesOthersObjectsAlone: a kustomization that installs
// other things beside this one (here a ClusterRoleBinding and a webhook
// configuration such as cert-manager's) keeps their namespaces: the
// follow-namespace transformer rewrites our objects only.
func TestRelocationLeavesOthersObjectsAlone(t *testing.T) {
	block, err := testenv.READMEKustomization("kustomize-overlay")
	if err != nil {
		t.Fatal(err)
	}
	const foreign = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: cert-manager-controller}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: ServiceAccount, name: cert-manager, namespace: cert-manager}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: cert-manager-webhook
  annotations: {cert-manager.io/inject-ca-from-secret: cert-manager/cert-manager-webhook-ca, cert-manager.io/inject-ca-from: cert-manager/webhook}
webhooks:
  - name: webhook.cert-manager.io
    admissionReviewVersions: [v1]
    sideEffects: None
    clientConfig: {service: {name: cert-manager-webhook, namespace: cert-manager, path: /validate}}
    namespaceSelector:
      matchExpressions:
        - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, cert-manager]}
`
	k := strings.Replace(block, "resources:\n", "resources:\n  - foreign.yaml\n", 1)
	dir, err := testenv.KustomizationInCheckout(k)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "foreign.yaml"), []byte(foreign), 0o644); err != nil {
		t.Fatal(err)
	}
	_, objs := buildDir(t, dir)
	crb := &rbacv1.ClusterRoleBinding{}
	objs.get(t, "ClusterRoleBinding/cert-manager-controller", crb)
	if ns := crb.Subjects[0].Namespace; ns != "cert-manager" {
		t.Errorf("another's ClusterRoleBinding subject moved to %s", ns)
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	objs.get(t, "ValidatingWebhookConfiguration/cert-manager-webhook", v)
	if got := v.Annotations["cert-manager.io/inject-ca-from"]; got != "cert-manager/webhook" {
		t.Errorf("another's inject-ca-from rewritten to %s", got)
	}
	w := v.Webhooks[0]
	if w.ClientConfig.Service.Namespace != "cert-manager" || !slices.Equal(w.NamespaceSelector.MatchExpressions[0].Values, []string{"kube-system", "cert-manager"}) {
		t.Errorf("another's webhook rewritten: service %+v, namespaceSelector %+v", w.ClientConfig.Service, w.NamespaceSelector)
	}
}

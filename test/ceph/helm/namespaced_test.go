// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package helm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/test/internal/helmchart"
)

// TestChartNamespacedInstall installs the chart with cephNamespaces (a
// namespaced install) on a real API server and proves both halves of the
// promise:
//   - confinement: impersonating each component's ServiceAccount, no Secret
//     outside the Ceph namespace can be read (not cluster-wide, not in
//     kube-system, default, or a namespace holding Ceph cluster objects that
//     is not listed), nor a Deployment or pod there;
//   - function: the built mgr-webhook and mgr-bootstrap, run as those
//     ServiceAccounts with the flags the chart's Deployments carry, complete a
//     minimal mgr in the Ceph namespace and make its cephx key on a real Ceph
//     mon, while a mgr Deployment in the unlisted namespace is left as it was
//     written.
func TestChartNamespacedInstall(t *testing.T) {
	const (
		ns       = "ceph-admission"
		cephNS   = "ceph-a"
		unlisted = "ceph-unlisted"
	)
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	binDir := testenv.BuildForTest(t, "mgr-webhook", "mgr-bootstrap")
	hostIP, err := testenv.HostIP()
	if err != nil {
		t.Fatal(err)
	}
	ceph, err := cephtest.Start(ctx, cephtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ceph.Stop)
	api, err := testenv.StartAPIServerWith(testenv.APIServerOptions{ServiceRouting: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Stop)
	k8s := api.Client
	for _, n := range []string{cephNS, unlisted} {
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}

	install(t, api, ns, "{certificates: {mode: self-signed}, cephNamespaces: ["+cephNS+"]}")

	// The cluster objects of both namespaces; the unlisted one's Secrets are
	// what a cluster-wide install could read and this one must not.
	listed := testenv.CephCluster{Namespace: cephNS, FSID: ceph.FSID, MonHost: ceph.MonHost, Members: "a", AdminKeyring: ceph.AdminKeyring}
	other := testenv.CephCluster{Namespace: unlisted, FSID: "5e1f0c4a-8f61-4a5e-9d57-2b7cf2a0c6d1", MonHost: "[v2:10.0.0.1:3300]", Members: "a", AdminKeyring: "[client.admin]\n"}
	for _, c := range []testenv.CephCluster{listed, other} {
		if err := c.Create(ctx, k8s); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("no ServiceAccount reads outside the Ceph namespaces", func(t *testing.T) {
		for _, sa := range []string{"mgr-webhook", "mgr-bootstrap"} {
			as, err := client.New(api.ConfigAs(testenv.ServiceAccountUser(ns, sa)), client.Options{Scheme: k8s.Scheme()})
			if err != nil {
				t.Fatal(err)
			}
			refused := map[string]func() error{
				"list Secrets in every namespace": func() error { return as.List(ctx, &corev1.SecretList{}) },
				"list Secrets in kube-system":     func() error { return as.List(ctx, &corev1.SecretList{}, client.InNamespace("kube-system")) },
				"list Secrets in default":         func() error { return as.List(ctx, &corev1.SecretList{}, client.InNamespace("default")) },
				"get the unlisted cluster's Secret rook-ceph-config": func() error {
					return as.Get(ctx, client.ObjectKey{Namespace: unlisted, Name: "rook-ceph-config"}, &corev1.Secret{})
				},
				"get the unlisted cluster's admin keyring": func() error {
					return as.Get(ctx, client.ObjectKey{Namespace: unlisted, Name: "rook-ceph-admin-keyring"}, &corev1.Secret{})
				},
				"list Deployments in the unlisted namespace": func() error {
					return as.List(ctx, &appsv1.DeploymentList{}, client.InNamespace(unlisted))
				},
				"list pods in the unlisted namespace": func() error {
					return as.List(ctx, &corev1.PodList{}, client.InNamespace(unlisted))
				},
			}
			if sa == "mgr-bootstrap" {
				// ClusterRole mgr-bootstrap-finalizers: the controller sees
				// and releases its mgrs of a Ceph namespace being deleted,
				// whose RoleBinding goes first (no Secret, no pod).
				delete(refused, "list Deployments in the unlisted namespace")
			}
			for what, try := range refused {
				if err := try(); !apierrors.IsForbidden(err) {
					t.Errorf("%s could %s: %v, want Forbidden", sa, what, err)
				}
			}
			// The same reads in the Ceph namespace pass: the refusals above
			// are the install mode's, not a broken binding's.
			if err := as.Get(ctx, client.ObjectKey{Namespace: cephNS, Name: "rook-ceph-config"}, &corev1.Secret{}); err != nil {
				t.Errorf("%s cannot get Secret %s/rook-ceph-config: %v", sa, cephNS, err)
			}
			if err := as.List(ctx, &appsv1.DeploymentList{}, client.InNamespace(cephNS)); err != nil {
				t.Errorf("%s cannot list Deployments in %s: %v", sa, cephNS, err)
			}
		}
	})

	// The components run with the chart's own flags for the install mode.
	policy := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mgr-webhook-policy"}, policy); err != nil {
		t.Fatal(err)
	}
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(policy.Data["policy.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	namespacesArg := func(name string) string {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			t.Fatal(err)
		}
		for _, a := range expandedArgs(d.Spec.Template.Spec.Containers[0]) {
			if strings.HasPrefix(a, "--namespaces=") {
				return a
			}
		}
		t.Fatalf("the chart's %s runs without --namespaces: %v", name, d.Spec.Template.Spec.Containers[0].Args)
		return ""
	}
	if got, want := namespacesArg("mgr-webhook"), "--namespaces="+cephNS; got != want {
		t.Fatalf("the chart's mgr-webhook runs with %s, want %s", got, want)
	}
	spawn := func(name string, args ...string) {
		t.Helper()
		asSA, err := api.KubeconfigAs(testenv.ServiceAccountUser(ns, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(asSA) })
		probe, err := testenv.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		args = append([]string{"--kubeconfig", asSA, "--policy=" + policyFile, "--metrics-bind-address=0", "--health-probe-bind-address=:" + strconv.Itoa(probe)}, args...)
		proc, err := testenv.SpawnReady(ctx, filepath.Join(binDir, name), filepath.Join(t.TempDir(), name+".log"), probe, time.Minute, args...)
		if err != nil {
			t.Fatal(err)
		}
		proc.StopAtCleanup(t, 10*time.Second)
	}
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.ServeServiceLocally(ctx, k8s, ns, "mgr-webhook", "https", hostIP, port); err != nil {
		t.Fatal(err)
	}
	// Ready only once its per-namespace informers have listed as the
	// ServiceAccount: a cluster-wide list would be refused and never sync.
	spawn("mgr-webhook", namespacesArg("mgr-webhook"), "--cert-mode=self-signed", "--namespace="+ns, "--leader-elect",
		"--cert-dir="+t.TempDir(), "--host="+hostIP, "--port="+strconv.Itoa(port))
	spawn("mgr-bootstrap", namespacesArg("mgr-bootstrap"), "--namespace="+ns, "--leader-election-namespace="+ns, "--ceph-connect-timeout=5s",
		"--ceph-release-interval=2s")

	apply := func(manifest []byte) ([]byte, error) {
		c := exec.Command(api.Kubectl, "--kubeconfig", api.Kubeconfig, "apply", "-f", "-")
		c.Stdin = strings.NewReader(string(manifest))
		return c.CombinedOutput()
	}
	poll := func(what string, timeout time.Duration, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: not within %s", what, timeout)
		}
	}

	// The unlisted namespace first: once the listed mgr is done, the
	// controller has had every chance to touch it, and cannot even see it.
	// It is a valid Deployment as written: a minimal mgr would be refused by
	// the API server's own validation (no selector) without completion.
	mgrLabels := map[string]string{contract.LabelApp: contract.AppName, contract.LabelMgrID: "c"}
	foreign := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: unlisted, Name: "rook-ceph-mgr-c", Labels: mgrLabels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: mgrLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: mgrLabels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "mgr", Image: "quay.io/ceph/ceph:v20.2.4"}}},
			},
		},
	}
	if err := k8s.Create(ctx, foreign); err != nil {
		t.Fatalf("a mgr Deployment in the unlisted namespace: %v", err)
	}

	// mgr id b: cephtest's own daemon already holds mgr.a's key.
	manifest, err := testenv.MinimalMgr(root, cephNS, "b", [2]int32{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	if werr := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		out, err = apply(manifest)
		return err == nil, nil
	}); werr != nil {
		t.Fatalf("the webhook's CA injected and a minimal mgr admitted: not within 1m; last kubectl apply: %v: %s", err, out)
	}
	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: cephNS, Name: "rook-ceph-mgr-b"}, d); err != nil {
		t.Fatal(err)
	}
	if args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--fsid="+ceph.FSID) {
		t.Fatalf("the mgr in %s was not completed (apply said %s): args %s", cephNS, out, args)
	}
	keyring := &corev1.Secret{}
	poll("the controller's keyring Secret for mgr b", 2*time.Minute, func() bool {
		return k8s.Get(ctx, client.ObjectKey{Namespace: cephNS, Name: "rook-ceph-mgr-b-keyring"}, keyring) == nil
	})
	key, err := ceph.GetKey(ctx, "mgr.b")
	if err != nil {
		t.Fatalf("the controller made no mgr.b key on the Ceph mon: %v", err)
	}
	if !strings.Contains(string(keyring.Data["keyring"]), key) {
		t.Error("the keyring Secret does not hold the key Ceph has for mgr.b")
	}

	// A CephRelease is cluster-scoped: the namespaced install still lets
	// the controller write the served cluster's (and no other), and the
	// webhook read them.
	release := func(name string) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("CephRelease"))
		return u, k8s.Get(ctx, client.ObjectKey{Name: name}, u)
	}
	poll("the controller's CephRelease of "+cephNS, 2*time.Minute, func() bool {
		u, err := release(cephNS)
		osd, _, _ := unstructured.NestedString(u.Object, "status", "requireOSDRelease")
		return err == nil && osd != ""
	})
	if _, err := release(unlisted); !apierrors.IsNotFound(err) {
		t.Errorf("a CephRelease of the unlisted namespace: %v", err)
	}
	asWebhook, err := client.New(api.ConfigAs(testenv.ServiceAccountUser(ns, "mgr-webhook")), client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("CephReleaseList"))
	if err := asWebhook.List(ctx, list); err != nil || len(list.Items) == 0 {
		t.Errorf("the webhook lists the CephReleases: %d, %v", len(list.Items), err)
	}

	stored := &appsv1.Deployment{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: unlisted, Name: "rook-ceph-mgr-c"}, stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.Spec.Template.Spec.Containers) != 1 || len(stored.Spec.Template.Spec.InitContainers) > 0 || len(stored.Spec.Template.Spec.Containers[0].Args) > 0 {
		t.Errorf("the webhook completed a mgr in the unlisted namespace: %+v", stored.Spec.Template.Spec)
	}
	if len(stored.Finalizers) > 0 || stored.Annotations[contract.AnnotationBootstrapStatus] != "" {
		t.Errorf("the controller touched a mgr in the unlisted namespace: finalizers %v, annotations %v", stored.Finalizers, stored.Annotations)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: unlisted, Name: "rook-ceph-mgr-c-keyring"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("a keyring Secret in the unlisted namespace: %v", err)
	}
}

// TestChartCephNamespacesValue: with cephNamespaces the chart binds the
// components' ClusterRoles by a RoleBinding in each listed namespace and by no
// ClusterRoleBinding (the metrics reviews' and, self-signed, the webhook
// configurations' stay cluster-wide: they are cluster-scoped), calls every
// webhook for those namespaces only, and passes them to both binaries; with
// the opt-in allNamespaces, nothing of that is rendered.
func TestChartCephNamespacesValue(t *testing.T) {
	for _, mode := range []string{"self-signed", "cert-manager"} {
		t.Run(mode, func(t *testing.T) {
			docs := documents(t, template(t, "ceph-admission", values(t, "{certificates: {mode: "+mode+"}, cephNamespaces: [ceph-a, ceph-b]}")))
			var roleBindings, clusterBindings []string
			for _, o := range docs {
				switch o.GetKind() {
				case "RoleBinding":
					roleBindings = append(roleBindings, o.GetNamespace()+"/"+o.GetName())
				case "ClusterRoleBinding":
					clusterBindings = append(clusterBindings, o.GetName())
				case "Deployment":
					if args := expandedArgs(container(t, o)); !slices.Contains(args, "--namespaces=ceph-a,ceph-b") {
						t.Errorf("Deployment %s runs without --namespaces=ceph-a,ceph-b: %v", o.GetName(), args)
					}
				case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
					hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
					for _, h := range hooks {
						exprs, _, _ := unstructured.NestedSlice(h.(map[string]any), "namespaceSelector", "matchExpressions")
						if !slices.ContainsFunc(exprs, func(e any) bool {
							m := e.(map[string]any)
							return m["key"] == "kubernetes.io/metadata.name" && m["operator"] == "In" && fmt.Sprint(m["values"]) == "[ceph-a ceph-b]"
						}) {
							t.Errorf("%s webhook %s is called outside ceph-a, ceph-b: %v", o.GetKind(), h.(map[string]any)["name"], exprs)
						}
					}
				}
			}
			for _, want := range []string{"ceph-a/mgr-webhook-ceph", "ceph-b/mgr-webhook-ceph", "ceph-a/mgr-bootstrap-ceph", "ceph-b/mgr-bootstrap-ceph"} {
				if !slices.Contains(roleBindings, want) {
					t.Errorf("no RoleBinding %s (have %v)", want, roleBindings)
				}
			}
			for _, name := range clusterBindings {
				// mgr-policy: a MgrPolicy is cluster-scoped, read-only but for its status.
				// mgr-bootstrap-finalizers: a deleted Ceph namespace's mgrs are released.
				// mgr-*-cephreleases: a CephRelease is cluster-scoped.
				if !slices.Contains([]string{"mgr-metrics-auth", "mgr-webhook-certs", "mgr-policy", "mgr-bootstrap-finalizers",
					"mgr-bootstrap-cephreleases", "mgr-webhook-cephreleases"}, name) {
					t.Errorf("ClusterRoleBinding %s in a namespaced install", name)
				}
			}
			cluster := documents(t, template(t, "ceph-admission", values(t, "{certificates: {mode: "+mode+"}, cephNamespaces: [], allNamespaces: true}")))
			for _, o := range cluster {
				if (o.GetKind() == "RoleBinding" && o.GetNamespace() != "ceph-admission") ||
					(o.GetKind() == "Deployment" && !slices.Contains(expandedArgs(container(t, o)), "--namespaces=")) {
					t.Errorf("a cluster-wide install renders %s %s/%s of the namespaced mode", o.GetKind(), o.GetNamespace(), o.GetName())
				}
			}
		})
	}
}

// TestChartRefusesAnUnsafeNamespaceChoice: the chart serves rook-ceph by
// default; an empty cephNamespaces is refused unless allNamespaces says so
// (a cluster-wide controller reads every Secret), both together are
// refused, and so is the install's own namespace as a Ceph namespace (it
// holds the webhook's CA key); the NetworkPolicy is on by default, and an
// install without the control plane's CIDRs is refused. Each refusal names
// the value and the fix.
func TestChartRefusesAnUnsafeNamespaceChoice(t *testing.T) {
	def := documents(t, template(t, "mgr-webhook-system", values(t, "{}")))
	var bound []string
	for _, o := range def {
		if o.GetKind() == "RoleBinding" && strings.HasSuffix(o.GetName(), "-ceph") {
			bound = append(bound, o.GetNamespace())
		}
	}
	if fmt.Sprint(bound) != "[rook-ceph rook-ceph]" {
		t.Errorf("default values bind the components in %v, want rook-ceph (twice)", bound)
	}
	for _, c := range []struct{ ns, values, want string }{
		{"mgr-webhook-system", "{cephNamespaces: []}", "cephNamespaces is empty: list the namespaces your Ceph clusters run in"},
		{"mgr-webhook-system", "{cephNamespaces: null}", "or set allNamespaces=true"},
		{"mgr-webhook-system", "{allNamespaces: true}", "allNamespaces=true serves every namespace: set cephNamespaces to [] with it"},
		{"mgr-webhook-system", "{cephNamespaces: [rook-ceph, mgr-webhook-system]}", "cephNamespaces lists mgr-webhook-system, the install's own namespace, which holds the webhook's CA key"},
		{"default", "{namespaceOverride: ceph-admission, cephNamespaces: [ceph-admission]}", "cephNamespaces lists ceph-admission, the install's own namespace"},
		// The NetworkPolicy ships on: an install must say where the control plane is.
		{"mgr-webhook-system", "{networkPolicy: {}}", "networkPolicy.controlPlaneCIDRs is empty: list the CIDRs the API server calls the webhook from"},
		{"mgr-webhook-system", "{networkPolicy: {enabled: true, controlPlaneCIDRs: []}}", "or set networkPolicy.enabled=false to install no NetworkPolicy"},
	} {
		t.Run(c.values, func(t *testing.T) {
			_, err := helmchart.RenderChart(c.ns, values(t, c.values))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("rendered with %s: %v; want an error containing %q", c.values, err, c.want)
			}
		})
	}
}

// expandedArgs are c's args with $(VAR) references to its env's values
// expanded, as the kubelet runs them.
func expandedArgs(c corev1.Container) []string {
	var out []string
	for _, a := range c.Args {
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				a = strings.ReplaceAll(a, "$("+e.Name+")", e.Value)
			}
		}
		out = append(out, a)
	}
	return out
}

// container is the first container of Deployment o.
func container(t *testing.T, o *unstructured.Unstructured) corev1.Container {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Spec.Containers[0]
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package manifests checks the kustomize installation: every overlay builds,
// applies with --dry-run=server to a real kube-apiserver (with cert-manager's
// CRDs from its Go module for that overlay), and holds the properties that
// keep a webhook safe in the admission path.
package manifests

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/certs"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/test/internal/kustomized"
)

var overlays = []string{"base", "overlays/self-signed", "overlays/cert-manager"}

// objects is a kustomize build, by kind/name.
type objects map[string][]byte

func build(t *testing.T, overlay string) (string, objects) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return buildDir(t, filepath.Join(root, "manifests", overlay))
}

// buildDir builds any kustomization directory, as kubectl kustomize does
// (kustomized), into a file that the tests may apply.
func buildDir(t *testing.T, dir string) (string, objects) {
	t.Helper()
	data, err := kustomized.Build(dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	path := filepath.Join(t.TempDir(), "build.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, parseBuild(t, path, data)
}

// buildFile reads rendered manifests.
func buildFile(t *testing.T, path string) (string, objects) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, parseBuild(t, path, data)
}

// parseBuild indexes a build's documents by kind/name.
func parseBuild(t *testing.T, path string, data []byte) objects {
	t.Helper()
	docs, err := testenv.Documents(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	objs := objects{}
	for _, d := range docs {
		objs[d.Object.GetKind()+"/"+d.Object.GetName()] = d.Raw
	}
	return objs
}

func (o objects) get(t *testing.T, key string, into any) {
	t.Helper()
	doc, ok := o[key]
	if !ok {
		t.Fatalf("%s not in the build (have %v)", key, o.keys())
	}
	if err := yaml.UnmarshalStrict(doc, into); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
}

func (o objects) keys() []string {
	var ks []string
	for k := range o {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestOverlaysApplyToARealAPIServer: the README's kustomization (each
// overlay with the control plane's CIDR set) applies in full with
// kubectl apply --dry-run=server (the API server validates every object and
// field), and so does the base. An overlay applied as it is, without a
// CIDR, fails on NetworkPolicy mgr-webhook alone, naming its ipBlock.cidr
// and the placeholder: the install-time error of an install that does not
// say where its control plane is.
func TestOverlaysApplyToARealAPIServer(t *testing.T) {
	api, err := testenv.StartForInstalls("mgr-webhook-system")
	if err != nil {
		t.Fatal(err)
	}
	defer api.Stop()
	apply := func(t *testing.T, path string) (string, error) {
		out, err := exec.Command(api.Kubectl, "--kubeconfig", api.Kubeconfig, "apply", "--dry-run=server", "-f", path).CombinedOutput()
		return string(out), err
	}
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			path, objs := build(t, overlay)
			if overlay == "base" {
				if out, err := apply(t, path); err != nil || strings.Count(out, "(server dry run)") != len(objs) {
					t.Fatalf("kubectl apply --dry-run=server: %v, %d of %d objects:\n%s", err, strings.Count(out, "(server dry run)"), len(objs), out)
				}
				return
			}
			out, err := apply(t, path)
			if err == nil || !strings.Contains(out, `The NetworkPolicy "mgr-webhook" is invalid`) ||
				!strings.Contains(out, "spec.ingress[0].from[0].ipBlock.cidr") || !strings.Contains(out, testenv.ControlPlaneCIDRPlaceholder) {
				t.Errorf("the overlay without a control-plane CIDR: %v, want NetworkPolicy mgr-webhook refused naming its ipBlock.cidr:\n%s", err, out)
			}
			if n := strings.Count(out, "(server dry run)"); n != len(objs)-1 {
				t.Errorf("%d of %d objects applied without the CIDR, want all but the NetworkPolicy:\n%s", n, len(objs), out)
			}

			block, err := testenv.READMEKustomization("kustomize")
			if err != nil {
				t.Fatal(err)
			}
			k := strings.ReplaceAll(block, "../manifests/overlays/self-signed", "../manifests/"+overlay)
			dir, err := testenv.KustomizationInCheckout(k)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			path, objs = buildDir(t, dir)
			out, err = apply(t, path)
			if err != nil {
				t.Fatalf("the README's kustomization on %s: kubectl apply --dry-run=server: %v\n%s", overlay, err, out)
			}
			if n := strings.Count(out, "(server dry run)"); n != len(objs) {
				t.Errorf("%d of %d objects applied:\n%s", n, len(objs), out)
			}
			np := &networkingv1.NetworkPolicy{}
			objs.get(t, "NetworkPolicy/mgr-webhook", np)
			if from := np.Spec.Ingress[0].From; len(from) != 1 || from[0].IPBlock == nil || from[0].IPBlock.CIDR != testenv.ControlPlaneCIDR {
				t.Errorf("the webhook port admits %+v, want the README's CIDR alone", from)
			}
		})
	}
}

// TestWebhookConfigurationsOnlySeeMgrDeployments: the properties that make
// failurePolicy Fail safe, decided by the API server before any call.
func TestWebhookConfigurationsOnlySeeMgrDeployments(t *testing.T) {
	_, objs := build(t, "base")
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	objs.get(t, "MutatingWebhookConfiguration/mgr-webhook", m)
	objs.get(t, "ValidatingWebhookConfiguration/mgr-webhook", v)
	type hook struct {
		name       string
		rules      []admissionregistrationv1.RuleWithOperations
		obj, ns    *metav1.LabelSelector
		side       admissionregistrationv1.SideEffectClass
		timeout    int32
		failure    admissionregistrationv1.FailurePolicyType
		svc        *admissionregistrationv1.ServiceReference
		conditions []admissionregistrationv1.MatchCondition
	}
	hooks := map[string]hook{}
	for _, w := range m.Webhooks {
		hooks[w.Name] = hook{w.Name, w.Rules, w.ObjectSelector, w.NamespaceSelector, *w.SideEffects, *w.TimeoutSeconds, *w.FailurePolicy, w.ClientConfig.Service, w.MatchConditions}
		if *w.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy {
			t.Errorf("%s: reinvocationPolicy %v", w.Name, *w.ReinvocationPolicy)
		}
	}
	for _, w := range v.Webhooks {
		hooks[w.Name] = hook{w.Name, w.Rules, w.ObjectSelector, w.NamespaceSelector, *w.SideEffects, *w.TimeoutSeconds, *w.FailurePolicy, w.ClientConfig.Service, w.MatchConditions}
	}
	if len(hooks) != 2 {
		t.Fatalf("webhooks %v, want mutate and scale (mgr writes take one round trip)", slices.Sorted(maps.Keys(hooks)))
	}
	for _, h := range hooks {
		if h.ns == nil || len(h.ns.MatchExpressions) != 1 || !slices.Contains(h.ns.MatchExpressions[0].Values, "kube-system") || !slices.Contains(h.ns.MatchExpressions[0].Values, "mgr-webhook-system") {
			t.Errorf("%s: namespaceSelector %+v does not exclude kube-system and mgr-webhook-system", h.name, h.ns)
		}
		if h.side != admissionregistrationv1.SideEffectClassNone || h.timeout > 5 || h.failure != admissionregistrationv1.Fail {
			t.Errorf("%s: sideEffects %s timeout %d failurePolicy %s", h.name, h.side, h.timeout, h.failure)
		}
		if h.svc == nil || h.svc.Name != "mgr-webhook" || h.svc.Namespace != "mgr-webhook-system" {
			t.Errorf("%s: service %+v", h.name, h.svc)
		}
	}
	conditionNames := func(cs []admissionregistrationv1.MatchCondition) []string {
		var names []string
		for _, c := range cs {
			names = append(names, c.Name)
		}
		return names
	}
	for _, name := range []string{"mutate.mgr.ceph.rook.io"} {
		h := hooks[name]
		// No objectSelector: it sees the Deployment's own labels only, and a
		// mgr whose label sits on its pod template would pass unjudged; the
		// runs-a-mgr matchCondition selects (test/static/manifestrules judges it).
		// Nothing the Deployment's writer sets (the opt-out label) may keep a
		// request from the webhook.
		if h.obj != nil && (len(h.obj.MatchLabels) != 0 || len(h.obj.MatchExpressions) != 0) {
			t.Errorf("%s: objectSelector %+v, want none", name, h.obj)
		}
		for _, r := range h.rules {
			if !slices.Equal(r.Resources, []string{"deployments"}) || !slices.Equal(r.APIGroups, []string{"apps"}) {
				t.Errorf("%s: rule %+v is wider than apps/v1 deployments", name, r)
			}
		}
		if got := conditionNames(h.conditions); !slices.Equal(got, []string{"runs-a-mgr", "not-being-deleted", "changes-spec-labels-or-user-annotations"}) {
			t.Errorf("%s: matchConditions %v", name, got)
		}
	}
	// The final-object check in the API server sees what the mutating
	// webhook sees: the same selectors and conditions, CREATE and UPDATE of
	// apps/v1 deployments, and Fail on an error.
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	objs.get(t, "ValidatingAdmissionPolicy/mgr-policy", vap)
	mutating := hooks["mutate.mgr.ceph.rook.io"]
	mc := vap.Spec.MatchConstraints
	if !equality.Semantic.DeepEqual(mutating.obj, mc.ObjectSelector) || !equality.Semantic.DeepEqual(mutating.ns, mc.NamespaceSelector) {
		t.Errorf("mgr-policy selects %+v in %+v; the mutating webhook %+v in %+v", mc.ObjectSelector, mc.NamespaceSelector, mutating.obj, mutating.ns)
	}
	if len(mc.ResourceRules) != 1 || !slices.Equal(mc.ResourceRules[0].Resources, []string{"deployments"}) || !slices.Equal(mc.ResourceRules[0].APIGroups, []string{"apps"}) ||
		!slices.Equal(mc.ResourceRules[0].Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}) {
		t.Errorf("mgr-policy rules %+v, want CREATE and UPDATE of apps/v1 deployments", mc.ResourceRules)
	}
	if len(vap.Spec.MatchConditions) != len(mutating.conditions) {
		t.Errorf("mgr-policy matchConditions %+v, the mutating webhook's %+v", vap.Spec.MatchConditions, mutating.conditions)
	}
	for i := range min(len(vap.Spec.MatchConditions), len(mutating.conditions)) {
		if c, w := vap.Spec.MatchConditions[i], mutating.conditions[i]; c.Name != w.Name || c.Expression != w.Expression {
			t.Errorf("mgr-policy matchCondition %d is %+v, the mutating webhook's %+v (check.yaml and mutating-scope.yaml differ)", i, c, w)
		}
	}
	// Ignore: the webhook, which fails closed, is the judge; an error of its
	// backstop (no MgrPolicy API) must not block every mgr write.
	if vap.Spec.FailurePolicy == nil || *vap.Spec.FailurePolicy != admissionregistrationv1.Ignore || vap.Spec.ParamKind == nil || vap.Spec.ParamKind.Kind != "MgrPolicy" {
		t.Errorf("mgr-policy failurePolicy %v paramKind %+v", vap.Spec.FailurePolicy, vap.Spec.ParamKind)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	objs.get(t, "ValidatingAdmissionPolicyBinding/mgr-policy", binding)
	if binding.Spec.ParamRef == nil || binding.Spec.ParamRef.Name != "default" || !slices.Equal(binding.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
		t.Errorf("mgr-policy binding %+v, want Deny with MgrPolicy default", binding.Spec)
	}
	scale := hooks["scale.mgr.ceph.rook.io"]
	if len(scale.rules) != 1 || !slices.Equal(scale.rules[0].Resources, []string{"deployments/scale"}) ||
		!slices.Equal(scale.rules[0].Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Update}) {
		t.Errorf("scale webhook rules %+v, want UPDATE of apps/v1 deployments/scale only", scale.rules)
	}
	if got := conditionNames(scale.conditions); !slices.Equal(got, []string{"mgr-deployment-name", "more-than-one-replica"}) {
		t.Errorf("scale webhook matchConditions %v: scaling other Deployments must not reach the webhook", got)
	}
}

func TestWebhookDeploymentIsHighlyAvailableAndLocked(t *testing.T) {
	_, objs := build(t, "base")
	d := &appsv1.Deployment{}
	objs.get(t, "Deployment/mgr-webhook", d)
	pdb := &policyv1.PodDisruptionBudget{}
	objs.get(t, "PodDisruptionBudget/mgr-webhook", pdb)
	c := d.Spec.Template.Spec.Containers[0]
	sc, psc := c.SecurityContext, d.Spec.Template.Spec.SecurityContext
	checks := map[string]bool{
		"2 replicas":                *d.Spec.Replicas >= 2,
		"PDB maxUnavailable 1":      pdb.Spec.MaxUnavailable != nil && pdb.Spec.MaxUnavailable.IntValue() == 1 && pdb.Spec.MinAvailable == nil,
		"no pinned uid (OpenShift)": psc != nil && psc.RunAsUser == nil && psc.RunAsGroup == nil,
		"pod anti-affinity":         d.Spec.Template.Spec.Affinity != nil && d.Spec.Template.Spec.Affinity.PodAntiAffinity != nil,
		"readiness probe":           c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet.Path == "/readyz",
		"liveness probe":            c.LivenessProbe != nil && c.LivenessProbe.HTTPGet.Path == "/healthz",
		"non-root":                  psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot,
		"read-only root filesystem": sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem,
		"no privilege escalation":   sc != nil && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation,
		"no CPU limit":              c.Resources.Limits.Cpu().IsZero(),
		"memory limit":              !c.Resources.Limits.Memory().IsZero(),
	}
	for what, ok := range checks {
		if !ok {
			t.Errorf("webhook Deployment: %s", what)
		}
	}
	// The controller's standby on another node than its leader, too.
	bs := &appsv1.Deployment{}
	objs.get(t, "Deployment/mgr-bootstrap", bs)
	if a := bs.Spec.Template.Spec.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != corev1.LabelHostname {
		t.Errorf("controller Deployment: affinity %+v, want its replicas preferred on different nodes", a)
	}
	svc := &corev1.Service{}
	objs.get(t, "Service/mgr-webhook", svc)
	if svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort.StrVal != c.Ports[0].Name {
		t.Errorf("Service %+v does not reach the webhook port %+v", svc.Spec.Ports[0], c.Ports[0])
	}
	b := &appsv1.Deployment{}
	objs.get(t, "Deployment/mgr-bootstrap", b)
	if !slices.Contains(b.Spec.Template.Spec.Containers[0].Args, "--leader-elect") {
		t.Error("bootstrap controller without leader election")
	}
}

// TestRBACIsLeastPrivilege: no wildcard anywhere; the webhook reads Secrets
// and ConfigMaps only by name, and none that carries a key.
func TestRBACIsLeastPrivilege(t *testing.T) {
	for _, overlay := range overlays {
		_, objs := build(t, overlay)
		for key, doc := range objs {
			kind, _, _ := strings.Cut(key, "/")
			if kind != "ClusterRole" && kind != "Role" {
				continue
			}
			r := &rbacv1.ClusterRole{}
			if err := yaml.Unmarshal(doc, r); err != nil {
				t.Fatal(err)
			}
			for _, rule := range r.Rules {
				for _, s := range [][]string{rule.Verbs, rule.Resources, rule.APIGroups} {
					if slices.Contains(s, "*") {
						t.Errorf("%s %s: wildcard in %+v", overlay, key, rule)
					}
				}
				if key != "ClusterRole/mgr-webhook" {
					continue
				}
				if (slices.Contains(rule.Resources, "secrets") || slices.Contains(rule.Resources, "configmaps")) && len(rule.ResourceNames) == 0 {
					t.Errorf("%s: the webhook's rule %+v is not limited by resourceNames", key, rule)
				}
				for _, keyed := range []string{"rook-ceph-mon", "rook-ceph-admin-keyring"} {
					if slices.Contains(rule.ResourceNames, keyed) {
						t.Errorf("%s: the webhook may read %s, which carries keys", key, keyed)
					}
				}
			}
		}
	}
}

// TestServiceAccountsCanDoOnlyTheirJob applies each overlay's RBAC to a real
// API server and asks it, as each component's ServiceAccount, what it may do:
// the webhook reads no Secret that carries a key (only the fsid source and
// the mon addresses), and the controller may set blockOwnerDeletion owner
// references (update on deployments/finalizers) without updating Deployments.
func TestServiceAccountsCanDoOnlyTheirJob(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	webhookSA := testenv.ServiceAccountUser("mgr-webhook-system", "mgr-webhook")
	bootstrapSA := testenv.ServiceAccountUser("mgr-webhook-system", "mgr-bootstrap")
	checks := []struct {
		as   string
		args []string
		want bool
	}{
		{webhookSA, []string{"get", "secret/rook-ceph-mon"}, false},
		{webhookSA, []string{"get", "secret/rook-ceph-admin-keyring"}, false},
		{webhookSA, []string{"get", "secret/rook-ceph-mgr-a-keyring"}, false},
		{webhookSA, []string{"get", "secret/rook-ceph-dashboard-password"}, false},
		{webhookSA, []string{"list", "secrets"}, false},
		{webhookSA, []string{"watch", "secrets"}, false},
		{webhookSA, []string{"get", "configmap/rook-ceph-config"}, true},
		{webhookSA, []string{"get", "secret/rook-ceph-config"}, true},
		{webhookSA, []string{"update", "deployments"}, false},
		{bootstrapSA, []string{"update", "deployments", "--subresource=finalizers"}, true},
		{bootstrapSA, []string{"update", "deployments"}, false},
		{bootstrapSA, []string{"patch", "deployments"}, true},
		{bootstrapSA, []string{"get", "secret/rook-ceph-admin-keyring"}, true},
		{bootstrapSA, []string{"delete", "secrets"}, false},
		// Delete: only to remove the per-mgr Services of earlier versions,
		// and only those its mgr Deployment controls (test/ceph/bootstrap).
		{bootstrapSA, []string{"delete", "services"}, true},
		{bootstrapSA, []string{"patch", "pods"}, true}, // the mgr_role label
		{bootstrapSA, []string{"delete", "pods"}, false},
		{bootstrapSA, []string{"create", "pods"}, false},
		{bootstrapSA, []string{"create", "poddisruptionbudgets.policy"}, true},
		// Patch only the cluster's Services and PDB, by name.
		{bootstrapSA, []string{"patch", "service/rook-ceph-mgr"}, true},
		{bootstrapSA, []string{"patch", "service/rook-ceph-mgr-dashboard"}, true},
		{bootstrapSA, []string{"patch", "service/kube-dns"}, false},
		{bootstrapSA, []string{"patch", "poddisruptionbudgets.policy/rook-ceph-mgr-pdb"}, true},
		{bootstrapSA, []string{"patch", "poddisruptionbudgets.policy/web"}, false},
		{bootstrapSA, []string{"delete", "poddisruptionbudgets.policy/web"}, false},
		{bootstrapSA, []string{"delete", "deployments"}, false},
	}
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			api, err := testenv.StartAPIServer()
			if err != nil {
				t.Fatal(err)
			}
			defer api.Stop()
			if _, err := testenv.ApplyRBAC(t.Context(), api.Client, filepath.Join(root, "manifests", overlay)); err != nil {
				t.Fatal(err)
			}
			for _, c := range checks {
				args := append([]string{"--kubeconfig", api.Kubeconfig, "auth", "can-i", "-n", "rook-ceph", "--as", c.as}, c.args...)
				out, err := exec.Command(api.Kubectl, args...).CombinedOutput()
				got := err == nil && strings.TrimSpace(string(out)) == "yes"
				if got != c.want {
					t.Errorf("kubectl auth can-i %s as %s: %s, want %v", strings.Join(c.args, " "), c.as, strings.TrimSpace(string(out)), c.want)
				}
			}
		})
	}
}

// TestCertManagerOverlay: the Certificate (cert-manager's own API types)
// covers the Service, lands where the webhook reads it, and is the one the
// cainjector annotation names.
func TestCertManagerOverlay(t *testing.T) {
	_, objs := build(t, "overlays/cert-manager")
	cert := &cmapi.Certificate{}
	objs.get(t, "Certificate/mgr-webhook-serving", cert)
	want := certs.ServiceHosts("mgr-webhook", "mgr-webhook-system").DNSNames
	if !slices.Equal(cert.Spec.DNSNames, want) {
		t.Errorf("Certificate dnsNames %v, want the Service's %v", cert.Spec.DNSNames, want)
	}
	if cert.Spec.IssuerRef.Name == "" || cert.Spec.RenewBefore == nil {
		t.Errorf("issuerRef %+v renewBefore %v", cert.Spec.IssuerRef, cert.Spec.RenewBefore)
	}
	issuer := &cmapi.Issuer{}
	objs.get(t, "Issuer/"+cert.Spec.IssuerRef.Name, issuer)
	if issuer.Spec.CA == nil {
		t.Errorf("serving Issuer %s is not a CA issuer", issuer.Name)
	}
	d := &appsv1.Deployment{}
	objs.get(t, "Deployment/mgr-webhook", d)
	if v := d.Spec.Template.Spec.Volumes[0]; v.Name != "certs" || v.Secret == nil || v.Secret.SecretName != cert.Spec.SecretName {
		t.Errorf("webhook volume %+v does not mount Secret %s", v, cert.Spec.SecretName)
	}
	if slices.ContainsFunc(d.Spec.Template.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--cert-mode=self-signed") }) {
		t.Error("cert-manager overlay runs the self-signed mode")
	}
	for _, key := range []string{"MutatingWebhookConfiguration/mgr-webhook", "ValidatingWebhookConfiguration/mgr-webhook"} {
		u := &unstructured.Unstructured{}
		objs.get(t, key, &u.Object)
		if got := u.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != cert.Namespace+"/"+cert.Name {
			t.Errorf("%s inject-ca-from %q, want %s/%s", key, got, cert.Namespace, cert.Name)
		}
	}
}

// TestKustomizeLibraryBuildsAsKubectl: these tests and test/static/manifestrules
// build with kustomize's library in process (kustomized: no kubectl under
// mutation testing, and a tenth of its start-up); what they judge is what
// kubectl kustomize, which users run, builds: every overlay, and the README's
// kustomizations, which add a namespace and the components.
func TestKustomizeLibraryBuildsAsKubectl(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{}
	for _, overlay := range overlays {
		dirs[overlay] = filepath.Join(root, "manifests", overlay)
	}
	for _, block := range []string{"kustomize-overlay", "kustomize-monitoring"} {
		k, err := testenv.READMEKustomization(block)
		if err != nil {
			t.Fatal(err)
		}
		dir, err := testenv.KustomizationInCheckout(k)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		dirs["README "+block] = dir
	}
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			path, err := testenv.Kustomize(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer os.Remove(path)
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := kustomized.Build(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("kustomize's library builds %d bytes, kubectl kustomize %d, not the same: the versions or options differ (sigs.k8s.io/kustomize/api in test/go.mod against the kubectl built by hack/build-binaries.sh)", len(got), len(want))
			}
		})
	}
}

// TestInstallNamesAreTheCodes: the names the binaries default to (their
// namespace, Deployments and ServiceAccounts, the webhook configuration
// mgrctl check reads) are the ones every overlay installs, so a rename in
// one place fails here instead of in a cluster.
func TestInstallNamesAreTheCodes(t *testing.T) {
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			_, objs := build(t, overlay)
			objs.get(t, "Namespace/"+contract.InstallNamespace, &corev1.Namespace{})
			objs.get(t, "MutatingWebhookConfiguration/"+contract.WebhookName, &admissionregistrationv1.MutatingWebhookConfiguration{})
			for _, name := range []string{contract.WebhookName, contract.ControllerName} {
				d := &appsv1.Deployment{}
				objs.get(t, "Deployment/"+name, d)
				if d.Namespace != contract.InstallNamespace || d.Spec.Template.Spec.ServiceAccountName != name {
					t.Errorf("Deployment %s: namespace %q, ServiceAccount %q; want %q and %q", name, d.Namespace, d.Spec.Template.Spec.ServiceAccountName, contract.InstallNamespace, name)
				}
				objs.get(t, "ServiceAccount/"+name, &corev1.ServiceAccount{})
			}
		})
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package manifestrules

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// runs: which ServiceAccounts run the code of each role (hack/gen-manifests.sh
// names a role for each package's markers). The webhook binary serves
// admission, rotates its certificates in self-signed mode, watches the
// MgrPolicy and guards its metrics; the bootstrap binary runs the
// controller, watches the MgrPolicy and guards its metrics.
var runs = map[string][]string{
	"mgr-webhook":       {"mgr-webhook"},
	"mgr-webhook-certs": {"mgr-webhook"},
	"mgr-bootstrap":     {"mgr-bootstrap"},
	"mgr-policy":        {"mgr-webhook", "mgr-bootstrap"},
	"mgr-metrics-auth":  {"mgr-webhook", "mgr-bootstrap"},
}

// clusterScoped are the cluster-scoped resources the markers name.
var clusterScoped = []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations", "tokenreviews", "subjectaccessreviews", "mgrpolicies", "mgrpolicies/status", "cephreleases", "cephreleases/status"}

// declared is one +kubebuilder:rbac marker: what the code next to it needs.
type declared struct {
	role string
	rule rbacv1.PolicyRule
	// own: the marker names the install namespace (namespace=...).
	own   bool
	where string
}

var (
	genRole = regexp.MustCompile(`gen rbac:roleName=(\S+) paths=\./(\S+)/\.\.\.`)
	marker  = regexp.MustCompile(`^// \+kubebuilder:rbac:(.*)$`)
)

// markers reads every RBAC marker of the packages hack/gen-manifests.sh
// generates roles from: the code's own statement of what it needs.
func markers(t *testing.T) []declared {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "hack", "gen-manifests.sh"))
	if err != nil {
		t.Fatal(err)
	}
	var all []declared
	for _, m := range genRole.FindAllStringSubmatch(string(script), -1) {
		role, pkg := m[1], m[2]
		if _, ok := runs[role]; !ok {
			t.Fatalf("hack/gen-manifests.sh generates role %s, which no ServiceAccount runs here (add it to runs)", role)
		}
		err := filepath.WalkDir(filepath.Join(root, pkg), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(data), "\n") {
				mm := marker.FindStringSubmatch(strings.TrimSpace(line))
				if mm == nil {
					continue
				}
				d := declared{role: role, where: fmt.Sprintf("%s:%d", strings.TrimPrefix(path, root+"/"), i+1)}
				for _, kv := range strings.Split(mm[1], ",") {
					k, v, _ := strings.Cut(kv, "=")
					values := strings.Split(strings.Trim(v, `"`), ";")
					switch k {
					case "groups":
						d.rule.APIGroups = values
					case "resources":
						d.rule.Resources = values
					case "verbs":
						d.rule.Verbs = values
					case "resourceNames":
						d.rule.ResourceNames = values
					case "namespace":
						d.own = true
					default:
						return fmt.Errorf("%s: marker key %s is not read here", d.where, k)
					}
				}
				all = append(all, d)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(all) == 0 {
		t.Fatal("no +kubebuilder:rbac markers found")
	}
	return all
}

// grant is a rule an install gives a ServiceAccount, and where.
type grant struct {
	rule rbacv1.PolicyRule
	// ns is the RoleBinding's namespace, "" for a ClusterRoleBinding.
	ns      string
	binding string
	via     string
}

// everywhere are the ClusterRoleBindings a namespaced install keeps
// cluster-wide though what they grant is namespaced, and why.
var everywhere = map[string]string{
	"mgr-bootstrap-finalizers": "deleting a Ceph namespace deletes the controller's RoleBinding there first; it must still see its mgrs' deletion and drop its finalizer",
}

// grants are the rules the install binds to ServiceAccount sa of its namespace.
func grants(t *testing.T, in install, sa string) []grant {
	t.Helper()
	var all []grant
	for _, b := range in.objs {
		if b.GetKind() != "RoleBinding" && b.GetKind() != "ClusterRoleBinding" {
			continue
		}
		binding := &rbacv1.RoleBinding{}
		convert(t, b.Object, binding)
		if !slices.ContainsFunc(binding.Subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && s.Namespace == in.ns
		}) {
			continue
		}
		role := in.get(binding.RoleRef.Kind, binding.RoleRef.Name)
		if role == nil || (binding.RoleRef.Kind == "Role" && role.GetNamespace() != b.GetNamespace()) {
			t.Errorf("%s %s/%s refers to %s %s, which the install does not create there", b.GetKind(), b.GetNamespace(), b.GetName(), binding.RoleRef.Kind, binding.RoleRef.Name)
			continue
		}
		r := &rbacv1.ClusterRole{}
		convert(t, role.Object, r)
		ns := ""
		if b.GetKind() == "RoleBinding" {
			ns = b.GetNamespace()
		}
		for _, rule := range r.Rules {
			all = append(all, grant{rule: rule, ns: ns, binding: b.GetName(), via: fmt.Sprintf("%s %s -> %s %s", b.GetKind(), b.GetName(), binding.RoleRef.Kind, binding.RoleRef.Name)})
		}
	}
	return all
}

// allowed: the grants allow the request (one verb, group, resource, name at
// most) in namespace ns ("" for a cluster-scoped resource), by RBAC's rule
// matching.
func allowed(gs []grant, req rbacv1.PolicyRule, ns string) bool {
	for _, g := range gs {
		if g.ns != "" && g.ns != ns {
			continue
		}
		if ok, _ := validation.Covers([]rbacv1.PolicyRule{g.rule}, []rbacv1.PolicyRule{req}); ok {
			return true
		}
	}
	return false
}

// applies: the install runs the code of role.
func applies(in install, role string) bool {
	return role != "mgr-webhook-certs" || in.selfSigned
}

// TestEachComponentMayDoWhatItsCodeNeeds: every permission a marker declares
// is granted to each ServiceAccount that runs that code, where it needs it
// (the install namespace for a namespace= marker, each Ceph namespace
// served, or the cluster), in every install.
func TestEachComponentMayDoWhatItsCodeNeeds(t *testing.T) {
	ms := markers(t)
	eachInstall(t, func(t *testing.T, in install) {
		cephNamespaces := in.cephNamespaces
		if len(cephNamespaces) == 0 {
			cephNamespaces = []string{"rook-ceph"}
		}
		for _, sa := range []string{"mgr-webhook", "mgr-bootstrap"} {
			gs := grants(t, in, sa)
			for _, m := range ms {
				if !applies(in, m.role) || !slices.Contains(runs[m.role], sa) {
					continue
				}
				for _, unit := range validation.BreakdownRule(m.rule) {
					namespaces := cephNamespaces
					switch {
					case m.own:
						namespaces = []string{in.ns}
					case slices.Contains(clusterScoped, unit.Resources[0]):
						namespaces = []string{""}
					}
					for _, ns := range namespaces {
						if !allowed(gs, unit, ns) {
							t.Errorf("%s may not %s %s.%s %v in %q, which %s needs", sa, unit.Verbs[0], unit.Resources[0], unit.APIGroups[0], unit.ResourceNames, ns, m.where)
						}
					}
				}
			}
		}
	})
}

// TestEachComponentMayDoNothingMore: every permission an install grants a
// ServiceAccount is declared by a marker of the code it runs, in no wider a
// scope (a namespace= marker's only in the install namespace, a namespaced
// install's only in its namespaces), and only the two ServiceAccounts of the
// install namespace are bound to anything.
func TestEachComponentMayDoNothingMore(t *testing.T) {
	ms := markers(t)
	eachInstall(t, func(t *testing.T, in install) {
		for _, sa := range []string{"mgr-webhook", "mgr-bootstrap"} {
			for _, g := range grants(t, in, sa) {
				for _, unit := range validation.BreakdownRule(g.rule) {
					ok := slices.ContainsFunc(ms, func(m declared) bool {
						if !applies(in, m.role) || !slices.Contains(runs[m.role], sa) {
							return false
						}
						if covered, _ := validation.Covers([]rbacv1.PolicyRule{m.rule}, []rbacv1.PolicyRule{unit}); !covered {
							return false
						}
						switch {
						case m.own:
							return g.ns == in.ns
						case g.ns == "" && everywhere[g.binding] != "":
							return true
						case len(in.cephNamespaces) > 0 && !slices.Contains(clusterScoped, unit.Resources[0]):
							return slices.Contains(in.cephNamespaces, g.ns)
						}
						return true
					})
					if !ok {
						scope := "cluster-wide"
						if g.ns != "" {
							scope = "in " + g.ns
						}
						t.Errorf("%s may %s %s.%s %v %s (%s), which no marker of its code declares there", sa, unit.Verbs[0], unit.Resources[0], unit.APIGroups[0], unit.ResourceNames, scope, g.via)
					}
				}
			}
		}
		for _, b := range in.objs {
			if b.GetKind() != "RoleBinding" && b.GetKind() != "ClusterRoleBinding" {
				continue
			}
			binding := &rbacv1.RoleBinding{}
			convert(t, b.Object, binding)
			for _, s := range binding.Subjects {
				if in.monitoring && s == prometheus {
					continue // TestPrometheusMayGetTheMetrics
				}
				if s.Kind != rbacv1.ServiceAccountKind || s.Namespace != in.ns || (s.Name != "mgr-webhook" && s.Name != "mgr-bootstrap") {
					t.Errorf("%s %s binds %s %s/%s", b.GetKind(), b.GetName(), s.Kind, s.Namespace, s.Name)
				}
			}
		}
	})
}

// TestKeyedSecretsStayOutOfTheWebhooksReach: what a compromised webhook pod
// must never read, whatever the markers say (they are code too).
func TestKeyedSecretsStayOutOfTheWebhooksReach(t *testing.T) {
	eachInstall(t, func(t *testing.T, in install) {
		gs := grants(t, in, "mgr-webhook")
		for _, verb := range []string{"get", "list", "watch"} {
			for _, name := range []string{"rook-ceph-mon", "rook-ceph-admin-keyring", "rook-ceph-mgr-a-keyring", "rook-ceph-dashboard-password", ""} {
				req := rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{""}, Resources: []string{"secrets"}}
				if name != "" {
					req.ResourceNames = []string{name}
				}
				if allowed(gs, req, "rook-ceph") {
					t.Errorf("mgr-webhook may %s secret %q in rook-ceph", verb, name)
				}
			}
		}
		for _, verb := range []string{"create", "update", "patch", "delete"} {
			if allowed(gs, rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}}, "rook-ceph") {
				t.Errorf("mgr-webhook may %s deployments", verb)
			}
		}
	})
}

// TestTheControllerReadsNoSecretOutsideItsCephNamespaces: a stolen
// controller token reads no Secret of kube-system (every controller's token),
// of a tenant, or of the install namespace but its own status key (the
// webhook's CA key is there), in every install but the chart's opt-in
// allNamespaces; and it may still read those of each Ceph namespace.
func TestTheControllerReadsNoSecretOutsideItsCephNamespaces(t *testing.T) {
	eachInstall(t, func(t *testing.T, in install) {
		if len(in.cephNamespaces) == 0 {
			return // allNamespaces: docs/security.md says what it can read
		}
		gs := grants(t, in, "mgr-bootstrap")
		secret := func(verb, name string) rbacv1.PolicyRule {
			r := rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{""}, Resources: []string{"secrets"}}
			if name != "" {
				r.ResourceNames = []string{name}
			}
			return r
		}
		for _, verb := range []string{"get", "list", "watch"} {
			for _, ns := range []string{"kube-system", "tenant", in.ns, ""} {
				for _, name := range []string{"", "mgr-webhook-certs", "rook-ceph-mon"} {
					if allowed(gs, secret(verb, name), ns) {
						t.Errorf("mgr-bootstrap may %s secret %q in %q", verb, name, ns)
					}
				}
			}
			for _, ns := range in.cephNamespaces {
				if !allowed(gs, secret(verb, ""), ns) {
					t.Errorf("mgr-bootstrap may not %s the secrets of its Ceph namespace %s", verb, ns)
				}
			}
		}
		if !allowed(gs, secret("get", "mgr-bootstrap-status-key"), in.ns) {
			t.Errorf("mgr-bootstrap may not get its status key in %s", in.ns)
		}
	})
}

// prometheus is the ServiceAccount the monitoring objects let read the
// metrics, by default (the chart's serviceMonitor.prometheusServiceAccount).
var prometheus = rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "prometheus-k8s", Namespace: "monitoring"}

// TestPrometheusMayGetTheMetrics: where the monitoring objects are
// installed, Prometheus' ServiceAccount may get /metrics (the components
// authorize it by a SubjectAccessReview) and nothing else.
func TestPrometheusMayGetTheMetrics(t *testing.T) {
	eachInstall(t, func(t *testing.T, in install) {
		var gs []grant
		for _, b := range in.objs {
			if b.GetKind() != "ClusterRoleBinding" && b.GetKind() != "RoleBinding" {
				continue
			}
			binding := &rbacv1.RoleBinding{}
			convert(t, b.Object, binding)
			if !slices.Contains(binding.Subjects, prometheus) {
				continue
			}
			role := in.get(binding.RoleRef.Kind, binding.RoleRef.Name)
			if role == nil || b.GetKind() != "ClusterRoleBinding" {
				t.Errorf("%s %s binds Prometheus to %s %s, which is not a ClusterRole of the install", b.GetKind(), b.GetName(), binding.RoleRef.Kind, binding.RoleRef.Name)
				continue
			}
			r := &rbacv1.ClusterRole{}
			convert(t, role.Object, r)
			for _, rule := range r.Rules {
				gs = append(gs, grant{rule: rule, via: b.GetName()})
			}
		}
		if !in.monitoring {
			if len(gs) > 0 {
				t.Errorf("an install without monitoring grants Prometheus %+v", gs)
			}
			return
		}
		metrics := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}
		if !allowed(gs, metrics, "") {
			t.Errorf("Prometheus (monitoring/prometheus-k8s) may not get /metrics: %+v", gs)
		}
		for _, g := range gs {
			if ok, _ := validation.Covers([]rbacv1.PolicyRule{metrics}, []rbacv1.PolicyRule{g.rule}); !ok {
				t.Errorf("Prometheus may do more than get /metrics: %+v (%s)", g.rule, g.via)
			}
		}
	})
}

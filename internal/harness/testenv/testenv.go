// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package testenv starts the real control-plane components the project is
// tested against (etcd and kube-apiserver through envtest, built by
// hack/build-binaries.sh) and creates the objects that make a namespace a
// Ceph cluster. It never skips: a missing component is an error that says how
// to get it.
package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// AssetsDir returns the directory with the Kubernetes binaries, from
// KUBEBUILDER_ASSETS, after checking that they are there.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		return "", errors.New("KUBEBUILDER_ASSETS is not set: run the tests with `make test` (it builds etcd and kube-apiserver with hack/build-binaries.sh and sets it)")
	}
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("%s missing from KUBEBUILDER_ASSETS=%s: run hack/build-binaries.sh", bin, dir)
		}
	}
	return dir, nil
}

// ProductModule is the module the binaries are built from; the tests that
// need helm, cert-manager or Prometheus live in a module of their own (test/).
const ProductModule = "github.com/rook-mgr/mgr-webhook"

// RepoRoot finds the checkout's root (the product module's) from the working
// directory of a test, in either module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		// The product's go.mod, not the test module's (test/go.mod).
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(data), "module "+ProductModule+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the go.mod of " + ProductModule + " is not above the working directory")
		}
		dir = parent
	}
}

// APIServer is a running etcd + kube-apiserver.
type APIServer struct {
	Env    *envtest.Environment
	Config *rest.Config
	// Kubeconfig is a file for kubectl, as a cluster admin.
	Kubeconfig string
	// Kubectl is the kubectl built with the control plane.
	Kubectl string
	// Scheme holds the built-in types; Client is an uncached client with it.
	Scheme *runtime.Scheme
	Client client.Client
	// CertDir holds the certificates RealNodes made ("" otherwise).
	CertDir string
	// restarted is the kube-apiserver RestartAPIServer started, if any.
	restarted *Process
}

// APIServerOptions configure StartAPIServerWith.
type APIServerOptions struct {
	// WebhookManifests are webhook configurations to install pointing at a
	// local serving port with a generated CA: serve them from
	// Env.WebhookInstallOptions.LocalServingHost, LocalServingPort and
	// LocalServingCertDir.
	WebhookManifests []string
	// ShippedWebhooks adds the project's own webhook configurations
	// (manifests/base, rendered by kustomize), pointing at the local serving
	// port as WebhookManifests do.
	ShippedWebhooks bool
	// CRDs are files or directories of CustomResourceDefinitions to install.
	CRDs []string
	// AdmissionPlugins are enabled on top of kube-apiserver's defaults (e.g.
	// OwnerReferencesPermissionEnforcement, as strict clusters run).
	AdmissionPlugins []string
	// ServiceRouting makes the API server call a webhook Service at its
	// EndpointSlices' addresses (--enable-aggregator-routing) instead of its
	// cluster IP, which nothing routes here: ServeServiceLocally then points a
	// Service at a local process.
	ServiceRouting bool
	// RealNodes makes the API server one that pods on a real kubelet can use
	// (hack/node.sh): it serves at this host's address with a certificate
	// pods trust for the kubernetes Service, and reaches kubelets with a
	// client certificate whose CA is KubeletClientCAFile in CertDir.
	RealNodes bool
	// Args are extra kube-apiserver flags (name without dashes -> value), as
	// a real node needs: the kubelet client certificate, the address type
	// the kubelet is reached at.
	Args map[string]string
}

// StartAPIServer starts etcd and kube-apiserver with the given webhook
// configurations installed (see APIServerOptions.WebhookManifests).
func StartAPIServer(webhookManifests ...string) (*APIServer, error) {
	return StartAPIServerWith(APIServerOptions{WebhookManifests: webhookManifests})
}

// StartWithShippedWebhooks starts etcd and kube-apiserver with the project's
// webhook configurations installed (APIServerOptions.ShippedWebhooks).
func StartWithShippedWebhooks() (*APIServer, error) {
	return StartAPIServerWith(APIServerOptions{ShippedWebhooks: true})
}

// StartAPIServerWith starts etcd and kube-apiserver as o says.
func StartAPIServerWith(o APIServerOptions) (*APIServer, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	if o.ShippedWebhooks {
		shipped, err := WebhookManifests()
		if err != nil {
			return nil, err
		}
		defer os.Remove(shipped) // read once, when the API server starts
		o.WebhookManifests = append(slices.Clone(o.WebhookManifests), shipped)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: o.WebhookManifests},
		CRDInstallOptions:     envtest.CRDInstallOptions{Paths: o.CRDs},
		ErrorIfCRDPathMissing: true,
	}
	if len(o.AdmissionPlugins) > 0 {
		env.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", strings.Join(o.AdmissionPlugins, ","))
	}
	if o.ServiceRouting {
		env.ControlPlane.GetAPIServer().Configure().Set("enable-aggregator-routing", "true")
	}
	var certDir string
	if o.RealNodes {
		if certDir, err = realNodeCerts(env); err != nil {
			return nil, err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(o.Args)) {
		env.ControlPlane.GetAPIServer().Configure().Set(k, o.Args[k])
	}
	cfg, err := env.Start()
	if err != nil {
		os.RemoveAll(certDir)
		return nil, fmt.Errorf("starting etcd + kube-apiserver from %s: %w", assets, err)
	}
	a := &APIServer{Env: env, Config: cfg, Kubectl: filepath.Join(assets, "kubectl"), Scheme: runtime.NewScheme(), CertDir: certDir}
	if err := clientgoscheme.AddToScheme(a.Scheme); err != nil {
		a.Stop()
		return nil, err
	}
	if a.Client, err = client.New(cfg, client.Options{Scheme: a.Scheme}); err != nil {
		a.Stop()
		return nil, err
	}
	user, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		a.Stop()
		return nil, err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		a.Stop()
		return nil, err
	}
	f, err := os.CreateTemp("", "mgr-webhook-kubeconfig-*")
	if err != nil {
		a.Stop()
		return nil, err
	}
	a.Kubeconfig = f.Name()
	if _, err := f.Write(kc); err != nil {
		f.Close()
		a.Stop()
		return nil, err
	}
	return a, f.Close()
}

// Stop stops the API server and etcd and removes their files.
func (a *APIServer) Stop() {
	if a.Kubeconfig != "" {
		os.Remove(a.Kubeconfig)
	}
	if a.restarted != nil {
		a.restarted.Stop(30 * time.Second)
		os.RemoveAll(filepath.Dir(a.restarted.Log))
	}
	_ = a.Env.Stop()
	if a.CertDir != "" {
		os.RemoveAll(a.CertDir)
	}
}

// CephCluster describes the cluster objects of one namespace.
type CephCluster struct {
	Namespace    string
	FSID         string
	MonHost      string // e.g. [v2:127.0.0.1:3300,v1:127.0.0.1:6789]
	Members      string // mon_initial_members, e.g. a
	AdminKeyring string // the client.admin keyring file
}

// CephConf is the ceph.conf of ConfigMap rook-ceph-config, as Rook writes it:
// the fsid and the mons in [global].
func (c CephCluster) CephConf() string {
	return fmt.Sprintf("[global]\nfsid = %s\nmon_host = %s\nmon_initial_members = %s\n", c.FSID, c.MonHost, c.Members)
}

// Objects are the namespace and Rook's cluster objects that make it a Ceph cluster.
func (c CephCluster) Objects() []client.Object {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: c.Namespace} }
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Namespace}},
		&corev1.Secret{ObjectMeta: meta(contract.MonSecretName), StringData: map[string]string{contract.MonSecretFSIDKey: c.FSID}},
		&corev1.Secret{ObjectMeta: meta(contract.ConfigSecretName), StringData: map[string]string{
			contract.ConfigSecretMonHostKey: c.MonHost, contract.ConfigSecretMembersKey: c.Members}},
		&corev1.ConfigMap{ObjectMeta: meta(contract.ConfigMapName), Data: map[string]string{contract.ConfigMapConfKey: c.CephConf()}},
		&corev1.Secret{ObjectMeta: meta(contract.AdminKeyringSecretName), StringData: map[string]string{contract.KeyringKey: c.AdminKeyring}},
	}
}

// Create creates the cluster's objects; existing ones are left as they are.
func (c CephCluster) Create(ctx context.Context, cl client.Client) error {
	for _, o := range c.Objects() {
		if err := cl.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s/%s: %w", o, o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

// Kustomize builds a kustomization with the kubectl built beside the control
// plane and writes the result to a temp file, whose path it returns.
func Kustomize(dir string) (string, error) {
	assets, err := AssetsDir()
	if err != nil {
		return "", err
	}
	out, err := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", dir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("kubectl kustomize %s: %v: %s", dir, err, ee.Stderr)
		}
		return "", fmt.Errorf("kubectl kustomize %s: %w", dir, err)
	}
	f, err := os.CreateTemp("", "mgr-webhook-manifests-*.yaml")
	if err != nil {
		return "", err
	}
	defer f.Close()
	_, err = f.Write(out)
	return f.Name(), err
}

// WebhookManifests builds manifests/base, whose webhook configurations envtest
// installs (pointing them at a local port with its own CA).
func WebhookManifests() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return Kustomize(filepath.Join(root, "manifests", "base"))
}

// RunKubectl runs the control plane's kubectl against it, stdin given, and
// returns its combined output.
func (a *APIServer) RunKubectl(ctx context.Context, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, a.Kubectl, append([]string{"--kubeconfig", a.Kubeconfig}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// MustKubectl is RunKubectl for a test: a failure ends it, with the output.
func (a *APIServer) MustKubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := a.RunKubectl(t.Context(), []byte(stdin), args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return out
}

// ConfigAs is the admin rest.Config impersonating user (e.g. a
// ServiceAccount), so a component in this process runs with exactly its RBAC.
func (a *APIServer) ConfigAs(user string) *rest.Config {
	cfg := rest.CopyConfig(a.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

// ServiceAccountUser is the user name of ServiceAccount namespace/name.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// DefaultCephNamespace is the Ceph namespace the shipped installs serve
// (components/ceph-namespace, the chart's cephNamespaces).
const DefaultCephNamespace = "rook-ceph"

// ControlPlaneCIDRPlaceholder stands for the control plane's CIDR in the
// shipped NetworkPolicy (components/network-policy) until an install sets
// it; ControlPlaneCIDR is the tests' (the README's example).
const (
	ControlPlaneCIDRPlaceholder = "CONTROL-PLANE-CIDR"
	ControlPlaneCIDR            = "10.0.0.0/24"
)

// ApplyRBAC creates the Namespace, ServiceAccounts, RBAC objects and the
// confinement ValidatingAdmissionPolicies of a kustomization (not its
// workloads or webhook configurations), as `kubectl apply -k` would, and
// returns how many it created: a component run as its ServiceAccount then
// has exactly the rights of the shipped install.
func ApplyRBAC(ctx context.Context, cl client.Client, kustomization string) (int, error) {
	return ApplyRBACServing(ctx, cl, kustomization)
}

// ApplyRBACServing is ApplyRBAC for a namespaced install that serves the
// Ceph namespaces served (none: as the kustomization has it): the
// kustomization's RoleBindings of its Ceph namespace (components/
// ceph-namespace's, named *-ceph) are created in each of served instead, as
// the chart binds each of its cephNamespaces. Missing namespaces are made.
func ApplyRBACServing(ctx context.Context, cl client.Client, kustomization string, served ...string) (int, error) {
	objs, err := kustomized(kustomization)
	if err != nil {
		return 0, err
	}
	kinds := []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
	var out []*unstructured.Unstructured
	for _, u := range objs {
		if !slices.Contains(kinds, u.GetKind()) {
			continue
		}
		if len(served) == 0 || u.GetKind() != "RoleBinding" || !strings.HasSuffix(u.GetName(), "-ceph") {
			out = append(out, u)
			continue
		}
		for _, ns := range served {
			c := u.DeepCopy()
			c.SetNamespace(ns)
			out = append(out, c)
		}
	}
	return createAll(ctx, cl, out)
}

// CreateKinds builds a kustomization and creates its objects of the given
// kinds, in order of appearance; existing ones are left as they are. It
// returns how many it found.
func CreateKinds(ctx context.Context, cl client.Client, kustomization string, kinds ...string) (int, error) {
	objs, err := kustomized(kustomization)
	if err != nil {
		return 0, err
	}
	objs = slices.DeleteFunc(objs, func(u *unstructured.Unstructured) bool { return !slices.Contains(kinds, u.GetKind()) })
	return createAll(ctx, cl, objs)
}

// kustomized are the objects a kustomization builds.
func kustomized(kustomization string) ([]*unstructured.Unstructured, error) {
	path, err := Kustomize(kustomization)
	if err != nil {
		return nil, err
	}
	defer os.Remove(path)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Objects(data)
}

// createAll creates objs in order, and the namespace of one whose namespace
// does not exist yet (a namespaced install's RoleBindings in its Ceph
// namespace); existing ones are left as they are.
func createAll(ctx context.Context, cl client.Client, objs []*unstructured.Unstructured) (int, error) {
	n := 0
	for _, u := range objs {
		if ns := u.GetNamespace(); ns != "" {
			err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return n, fmt.Errorf("namespace %s: %w", ns, err)
			}
		}
		if err := cl.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			return n, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
		n++
	}
	return n, nil
}

// CertManagerCRDs is the CRD directory of the cert-manager module in go.mod.
func CertManagerCRDs() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager").Output()
	if err != nil {
		return "", fmt.Errorf("locating the cert-manager module: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "deploy", "crds")
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("cert-manager CRDs: %w (run go mod download)", err)
	}
	return dir, nil
}

// OpenReportsCRDs is the Report CRD of the OpenReports module in go.mod.
func OpenReportsCRDs() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/openreports/reports-api").Output()
	if err != nil {
		return "", fmt.Errorf("locating the openreports module: %w", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "openreports.io_reports.yaml")
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("OpenReports CRD: %w (run go mod download)", err)
	}
	return path, nil
}

// KubeconfigAs writes a copy of the admin kubeconfig that impersonates user
// (e.g. a ServiceAccount), so a component runs with exactly its RBAC.
func (a *APIServer) KubeconfigAs(user string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(a.Kubeconfig)
	if err != nil {
		return "", err
	}
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate = user
	}
	f, err := os.CreateTemp("", "mgr-webhook-kubeconfig-as-*")
	if err != nil {
		return "", err
	}
	f.Close()
	return f.Name(), clientcmd.WriteToFile(*cfg, f.Name())
}

// Tests and tools built on this package log controller-runtime errors to
// stderr and nothing else (without a logger, controller-runtime prints a stack
// trace at its first log line, e.g. for an admission warning).
func init() {
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
}

// PrometheusOperatorVersion is the Prometheus Operator whose CRDs
// (ServiceMonitor, PrometheusRule) the monitoring component is applied with.
const PrometheusOperatorVersion = "v0.85.0"

// PrometheusOperatorCRDs downloads the Prometheus Operator module from the Go
// module proxy (once; the module cache keeps it) and returns its CRD directory.
func PrometheusOperatorCRDs() (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/prometheus-operator/prometheus-operator@"+PrometheusOperatorVersion).Output()
	if err != nil {
		return "", fmt.Errorf("downloading the Prometheus Operator module %s: %w", PrometheusOperatorVersion, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Error != "" {
		return "", fmt.Errorf("the Prometheus Operator module %s: %v %s", PrometheusOperatorVersion, err, m.Error)
	}
	dir := filepath.Join(m.Dir, "example", "prometheus-operator-crd")
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("Prometheus Operator CRDs: %w", err)
	}
	return dir, nil
}

// StartForInstalls starts etcd and kube-apiserver with the CRDs the install
// manifests use (cert-manager's, the Prometheus Operator's, OpenReports') and creates the
// given namespaces (a server-side dry run cannot create the namespace it
// then uses) and DefaultCephNamespace, which every shipped install serves
// unless told otherwise and binds its components in: it exists where Rook
// runs, and an install does not create (or, uninstalled, delete) it.
func StartForInstalls(namespaces ...string) (*APIServer, error) {
	if !slices.Contains(namespaces, DefaultCephNamespace) {
		namespaces = append(namespaces, DefaultCephNamespace)
	}
	cm, err := CertManagerCRDs()
	if err != nil {
		return nil, err
	}
	po, err := PrometheusOperatorCRDs()
	if err != nil {
		return nil, err
	}
	or, err := OpenReportsCRDs()
	if err != nil {
		return nil, err
	}
	a, err := StartAPIServerWith(APIServerOptions{CRDs: []string{cm, po, or}})
	if err != nil {
		return nil, err
	}
	for _, ns := range namespaces {
		if err := a.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			a.Stop()
			return nil, err
		}
	}
	return a, nil
}

// KustomizationInCheckout writes a kustomization.yaml into a new directory at
// the repository root (kustomize takes relative paths only: "../manifests/..."
// from there) and returns the directory; remove it when done.
func KustomizationInCheckout(content string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(root, ".overlay-")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(content), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

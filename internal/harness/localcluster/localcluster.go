// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package localcluster runs the whole system on this machine, from real
// binaries: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
// kwok (a fake node, so pods become Ready), one throwaway Ceph mon + mgr per
// Ceph namespace, the namespace's Rook cluster objects made from that Ceph
// cluster, and mgr-webhook (self-signed certificates from certs/) and
// mgr-bootstrap as local processes. It is `make demo`'s cluster and the e2e
// suite's wherever no kind cluster exists. Stop removes everything it started.
package localcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// WebhookNamespace holds the webhook's certificate Secret.
const WebhookNamespace = "mgr-webhook-system"

// Options configure a local cluster.
type Options struct {
	// RepoRoot holds manifests/ and cmd/.
	RepoRoot string
	// BinDir holds mgr-webhook and mgr-bootstrap; built into WorkDir when empty.
	BinDir string
	// WorkDir receives logs and the kubeconfig; a temp dir (removed by Stop) when empty.
	WorkDir string
	// CephNamespaces each get their own Ceph cluster.
	CephNamespaces []string
	// MoreNamespaces are served beside CephNamespaces: namespaces a test
	// makes a Ceph cluster's objects in later. Both components serve these
	// and CephNamespaces only, as the shipped namespaced install does.
	MoreNamespaces []string
	// MgrIDs are the mgr daemons each Ceph cluster runs (["a"] when empty).
	MgrIDs []string
	// Log receives progress lines.
	Log io.Writer
	// FinalizerTimeout is the controller's --finalizer-timeout (its default when zero).
	FinalizerTimeout time.Duration
	// Verbose runs both components at their most verbose log level.
	Verbose bool
	// BootstrapReplicas of mgr-bootstrap run (1 when zero); more than one
	// elect a leader, as the shipped Deployment's two replicas do.
	BootstrapReplicas int
}

// Cluster is a running local cluster.
type Cluster struct {
	API     *testenv.APIServer
	Client  client.Client
	WorkDir string
	Cephs   map[string]*cephtest.Cluster
	work    *testenv.Workloads
	webhook *testenv.Process
	// policyFile holds SitePolicy.
	policyFile string
	// served are the Ceph namespaces both components serve.
	served []string
	// bootstraps are the mgr-bootstrap replicas; bootstrapArgs start one again.
	bootstraps    []*testenv.Process
	bootstrapArgs []string
	binDir        string
	ownsDir       bool
	log           io.Writer
	verbose       bool
	// MetricsURLs are the components' metrics endpoints, by name.
	MetricsURLs map[string]string
	stopping    bool
	// Ceph clusters start in the background; Stop waits for them.
	cephWG  sync.WaitGroup
	cephMu  sync.Mutex
	cephErr error
}

// Start brings everything up; on error, what was started is stopped.
func Start(ctx context.Context, o Options) (c *Cluster, err error) {
	c = &Cluster{WorkDir: o.WorkDir, Cephs: map[string]*cephtest.Cluster{}, log: o.Log, verbose: o.Verbose, MetricsURLs: map[string]string{}}
	if c.log == nil {
		c.log = io.Discard
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if c.WorkDir == "" {
		if c.WorkDir, err = os.MkdirTemp("", "mgr-webhook-local-"); err != nil {
			return c, err
		}
		c.ownsDir = true
	}
	if err := cephtest.Installed(); err != nil {
		return c, err
	}
	binDir := o.BinDir
	if binDir == "" {
		binDir = filepath.Join(c.WorkDir, "bin")
		c.step("building mgr-webhook and mgr-bootstrap into %s", binDir)
		if err := testenv.BuildCommands(ctx, o.RepoRoot, binDir, "mgr-webhook", "mgr-bootstrap"); err != nil {
			return c, err
		}
	}

	// Ceph clusters start while the control plane does.
	for _, ns := range o.CephNamespaces {
		c.step("starting a Ceph mon + mgr %v for namespace %s", orDefault(o.MgrIDs), ns)
		c.cephWG.Add(1)
		go func() {
			defer c.cephWG.Done()
			cc, err := cephtest.Start(ctx, cephtest.Options{MgrIDs: o.MgrIDs})
			c.cephMu.Lock()
			defer c.cephMu.Unlock()
			if err != nil {
				c.cephErr = fmt.Errorf("Ceph for %s: %w", ns, err)
				return
			}
			c.Cephs[ns] = cc
		}()
	}

	c.step("starting etcd + kube-apiserver (real binaries from %s)", os.Getenv("KUBEBUILDER_ASSETS"))
	// Strict like a hardened cluster: owner references that block deletion
	// need update on the owner's finalizers.
	if c.API, err = testenv.StartAPIServerWith(testenv.APIServerOptions{
		ShippedWebhooks:  true,
		AdmissionPlugins: []string{"OwnerReferencesPermissionEnforcement"},
		CRDs: []string{filepath.Join(o.RepoRoot, "manifests", "base", "policy", "generated", "mgr.ceph.rook.io_mgrpolicies.yaml"),
			filepath.Join(o.RepoRoot, "manifests", "base", "policy", "generated", "mgr.ceph.rook.io_cephreleases.yaml")},
	}); err != nil {
		return c, err
	}
	kc := filepath.Join(c.WorkDir, "kubeconfig")
	if err := copyFile(c.API.Kubeconfig, kc); err != nil {
		return c, err
	}
	os.Remove(c.API.Kubeconfig)
	c.API.Kubeconfig = kc
	c.Client = c.API.Client
	c.step("starting kube-controller-manager, kube-scheduler and kwok (%d nodes)", testenv.FakeNodes)
	if c.work, err = testenv.StartWorkloads(ctx, c.API); err != nil {
		return c, err
	}
	// Both components run as their ServiceAccounts with the shipped RBAC.
	c.served = append(slices.Clone(o.CephNamespaces), o.MoreNamespaces...)
	c.step("applying the RBAC of manifests/overlays/self-signed, bound in %v", c.served)
	if _, err := testenv.ApplyRBACServing(ctx, c.Client, filepath.Join(o.RepoRoot, "manifests", "overlays", "self-signed"), c.served...); err != nil {
		return c, err
	}
	c.binDir = binDir
	// The site's policy: its owner offers the default modules as choices, so
	// that a mgr may choose among them by annotation (the e2e suite does).
	c.policyFile = filepath.Join(c.WorkDir, "site-policy.yaml")
	if err := os.WriteFile(c.policyFile, []byte(SitePolicy), 0o600); err != nil {
		return c, err
	}
	if err := c.startWebhook(ctx); err != nil {
		return c, err
	}

	c.cephWG.Wait()
	if c.cephErr != nil {
		return c, c.cephErr
	}
	for _, ns := range o.CephNamespaces {
		cc := c.Cephs[ns]
		c.step("namespace %s: Rook's cluster objects for Ceph %s (mon %s)", ns, cc.FSID, cc.MonHost)
		objs := testenv.CephCluster{Namespace: ns, FSID: cc.FSID, MonHost: cc.MonHost, Members: "a",
			AdminKeyring: cc.AdminKeyring}
		if err := objs.Create(ctx, c.Client); err != nil {
			return c, err
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "rook-ceph-mgr", Namespace: ns}}
		if err := c.Client.Create(ctx, sa); err != nil {
			return c, err
		}
	}
	// The mgr daemons run outside Kubernetes with keys this harness made
	// (another tool's keys, to the controller): its clusters let it adopt them.
	c.bootstrapArgs = []string{"--ceph-connect-timeout=5s", "--adopt-existing-keys=" + strings.Join(o.CephNamespaces, ","), "--policy=" + c.policyFile, "--ceph-binary=" + testenv.ControllerCeph()}
	if o.FinalizerTimeout > 0 {
		c.bootstrapArgs = append(c.bootstrapArgs, "--finalizer-timeout="+o.FinalizerTimeout.String())
	}
	replicas := max(o.BootstrapReplicas, 1)
	if replicas == 1 {
		c.bootstrapArgs = append(c.bootstrapArgs, "--leader-elect=false")
	} else {
		c.bootstrapArgs = append(c.bootstrapArgs, "--leader-elect", "--leader-election-namespace="+WebhookNamespace)
	}
	c.bootstraps = make([]*testenv.Process, replicas)
	for i := range replicas {
		if err := c.StartBootstrap(ctx, i); err != nil {
			return c, err
		}
	}
	return c, nil
}

func orDefault(ids []string) []string {
	if len(ids) == 0 {
		return []string{"a"}
	}
	return ids
}

func (c *Cluster) step(format string, args ...any) {
	fmt.Fprintf(c.log, "==> "+format+"\n", args...)
}

// SitePolicy is the policy both components run with (RestartWebhook's
// --policy replaces it for the webhook): the defaults, the default modules
// offered as the choices of the modules annotation, and Pacific admitted:
// the host's daemons are Debian bookworm's Pacific, an end-of-life release
// a site still running it admits by lowering the minimum.
const SitePolicy = "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nmoduleChoices: [orchestrator_cli, rook, prometheus, dashboard]\nimages: {minimumCephVersion: \"16.2.0\"}\n"

// startWebhook runs mgr-webhook in self-signed mode on the address the API
// server calls, as its ServiceAccount: it makes its own CA and injects it into
// the configurations. extraArgs (e.g. --policy) come last.
func (c *Cluster) startWebhook(ctx context.Context, extraArgs ...string) error {
	wo := c.API.Env.WebhookInstallOptions
	probe, err := testenv.FreePort()
	if err != nil {
		return err
	}
	kc, err := c.kubeconfigOf("mgr-webhook")
	if err != nil {
		return err
	}
	common, err := c.commonArgs("mgr-webhook")
	if err != nil {
		return err
	}
	c.step("starting mgr-webhook on https://%s:%d, self-signed certificates (log: %s)", wo.LocalServingHost, wo.LocalServingPort, filepath.Join(c.WorkDir, "mgr-webhook.log"))
	args := append([]string{"--kubeconfig", kc, "--cert-mode=self-signed", "--namespace=" + WebhookNamespace,
		"--cert-dir", filepath.Join(c.WorkDir, "webhook-certs"), "--cert-extra-sans=" + wo.LocalServingHost,
		"--host", wo.LocalServingHost, "--port", strconv.Itoa(wo.LocalServingPort),
		// One replica and no Service: nothing to drain towards on a restart.
		"--shutdown-delay=0s", "--policy=" + c.policyFile}, common...)
	args = append(args, extraArgs...)
	p, err := c.spawn(ctx, filepath.Join(c.binDir, "mgr-webhook"), "mgr-webhook", probe, args...)
	if err != nil {
		return err
	}
	c.webhook = p
	return nil
}

// RestartWebhook stops mgr-webhook and starts it again with extraArgs (none:
// as it first ran), e.g. --policy=<file> to change the policy.
func (c *Cluster) RestartWebhook(ctx context.Context, extraArgs ...string) error {
	if c.webhook != nil {
		c.webhook.Stop(10 * time.Second)
		c.webhook = nil
	}
	return c.startWebhook(ctx, extraArgs...)
}

// BootstrapName names replica i of mgr-bootstrap: its log file
// (<name>.log) and its key in MetricsURLs.
func BootstrapName(i int) string {
	if i == 0 {
		return "mgr-bootstrap"
	}
	return fmt.Sprintf("mgr-bootstrap-%d", i+1)
}

// Webhook is the mgr-webhook process (nil while restarting).
func (c *Cluster) Webhook() *testenv.Process { return c.webhook }

// Bootstrap is replica i of mgr-bootstrap (nil while stopped).
func (c *Cluster) Bootstrap(i int) *testenv.Process { return c.bootstraps[i] }

// StartBootstrap starts replica i of mgr-bootstrap, as its ServiceAccount,
// and waits until it is ready; a replica that ran before is started again
// (its log appended to, its metrics on the same port).
func (c *Cluster) StartBootstrap(ctx context.Context, i int) error {
	if p := c.bootstraps[i]; p != nil && !p.Exited() {
		return fmt.Errorf("%s is running", BootstrapName(i))
	}
	name := BootstrapName(i)
	probe, err := testenv.FreePort()
	if err != nil {
		return err
	}
	kc, err := c.kubeconfigOf("mgr-bootstrap")
	if err != nil {
		return err
	}
	common, err := c.commonArgs(name)
	if err != nil {
		return err
	}
	args := append(append([]string{"--kubeconfig", kc}, c.bootstrapArgs...), common...)
	c.step("starting %s (log: %s)", name, filepath.Join(c.WorkDir, name+".log"))
	p, err := c.spawn(ctx, filepath.Join(c.binDir, "mgr-bootstrap"), name, probe, args...)
	if err != nil {
		return err
	}
	c.bootstraps[i] = p
	return nil
}

// commonArgs serve name's metrics on a free loopback port (kept across
// restarts) and, when verbose, log at the most verbose level.
func (c *Cluster) commonArgs(name string) ([]string, error) {
	url, ok := c.MetricsURLs[name]
	if !ok {
		port, err := testenv.FreePort()
		if err != nil {
			return nil, err
		}
		url = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
		c.MetricsURLs[name] = url
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/metrics")
	// Plain HTTP on loopback, so the harness scrapes without a token. Both
	// watch MgrPolicy default as the release manifests have them do; until
	// one exists, --policy is in force.
	args := []string{"--metrics-bind-address", addr, "--metrics-secure=false", "--policy-name=default", "--pod-name=" + name,
		"--namespaces=" + strings.Join(c.served, ",")}
	if c.verbose {
		args = append(args, "--zap-log-level=10")
	}
	return args, nil
}

// LogFiles are the components' log files.
func (c *Cluster) LogFiles() []string {
	files := []string{filepath.Join(c.WorkDir, "mgr-webhook.log")}
	for i := range c.bootstraps {
		files = append(files, filepath.Join(c.WorkDir, BootstrapName(i)+".log"))
	}
	return files
}

// kubeconfigOf writes a kubeconfig, in the work dir, that acts as
// ServiceAccount mgr-webhook-system/name.
func (c *Cluster) kubeconfigOf(name string) (string, error) {
	tmp, err := c.API.KubeconfigAs(testenv.ServiceAccountUser(WebhookNamespace, name))
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	kc := filepath.Join(c.WorkDir, name+".kubeconfig")
	return kc, copyFile(tmp, kc)
}

// spawn starts a component with its health probe on port and waits for /readyz.
func (c *Cluster) spawn(ctx context.Context, bin, name string, probe int, args ...string) (*testenv.Process, error) {
	return testenv.SpawnReady(ctx, bin, filepath.Join(c.WorkDir, name+".log"), probe, 90*time.Second, args...)
}

// Stop ends every process this cluster started and removes its files.
func (c *Cluster) Stop() {
	if c.stopping {
		return
	}
	c.stopping = true
	for _, p := range c.bootstraps {
		if p != nil {
			p.Stop(10 * time.Second)
		}
	}
	if c.webhook != nil {
		c.webhook.Stop(10 * time.Second)
	}
	if c.work != nil {
		c.work.Stop()
	}
	if c.API != nil {
		c.API.Stop()
	}
	c.cephWG.Wait()
	for _, cc := range c.Cephs {
		cc.Stop()
	}
	if c.ownsDir {
		os.RemoveAll(c.WorkDir)
	}
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}

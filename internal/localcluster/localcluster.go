// Package localcluster runs a throwaway Kubernetes control plane on this
// machine with the project's components attached as local processes: the
// environment of `make demo` and of the end-to-end suite where no kind
// cluster exists. Everything it starts is stopped by Stop.
package localcluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/internal/testenv"
)

// Options configure a local cluster.
type Options struct {
	// RepoRoot holds manifests/; BinDir the project's built binaries.
	RepoRoot, BinDir string
	// WorkDir receives logs and the kubeconfig; a temp dir when empty.
	WorkDir string
	// Namespaces to make Ceph clusters.
	Namespaces []string
	// Log receives progress lines.
	Log io.Writer
}

// Cluster is a running local cluster.
type Cluster struct {
	API     *testenv.APIServer
	Client  client.Client
	WorkDir string
	// Clusters are the Ceph clusters made, by namespace.
	Clusters map[string]testenv.CephCluster
	procs    []*testenv.Process
	ownsDir  bool
	log      io.Writer
}

// Start brings up etcd, kube-apiserver with the webhook configurations
// installed, and the mgr-webhook binary serving them.
func Start(ctx context.Context, o Options) (c *Cluster, err error) {
	c = &Cluster{WorkDir: o.WorkDir, Clusters: map[string]testenv.CephCluster{}, log: o.Log}
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
	c.step("starting etcd + kube-apiserver (real binaries from %s)", os.Getenv("KUBEBUILDER_ASSETS"))
	manifests, err := testenv.WebhookManifests()
	if err != nil {
		return c, err
	}
	defer os.Remove(manifests)
	if c.API, err = testenv.StartAPIServer(manifests); err != nil {
		return c, err
	}
	kc := filepath.Join(c.WorkDir, "kubeconfig")
	if err := copyFile(c.API.Kubeconfig, kc); err != nil {
		return c, err
	}
	c.API.Kubeconfig = kc
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	if c.Client, err = client.New(c.API.Config, client.Options{Scheme: scheme}); err != nil {
		return c, err
	}
	if err := c.startWebhook(ctx, o.BinDir); err != nil {
		return c, err
	}
	for _, ns := range o.Namespaces {
		cc := testenv.CephCluster{
			Namespace: ns, FSID: uuid.NewString(), MonHost: "[v2:127.0.0.1:3300,v1:127.0.0.1:6789]", Members: "a",
			AdminKeyring: "[client.admin]\n\tkey = AQAAAAAAAAAAABAAAAAAAAAAAAAAAAAAAAAAAA==\n", CephConf: "[global]\nmon_host = 127.0.0.1\n",
		}
		c.step("making namespace %s a Ceph cluster (fsid %s)", ns, cc.FSID)
		if err := cc.Create(ctx, c.Client); err != nil {
			return c, err
		}
		c.Clusters[ns] = cc
	}
	return c, nil
}

func (c *Cluster) step(format string, args ...any) {
	fmt.Fprintf(c.log, "==> "+format+"\n", args...)
}

// startWebhook runs bin/mgr-webhook on the port and certificates the API
// server was configured to call, and waits until it is ready.
func (c *Cluster) startWebhook(ctx context.Context, binDir string) error {
	wo := c.API.Env.WebhookInstallOptions
	probe, err := freePort()
	if err != nil {
		return err
	}
	logPath := filepath.Join(c.WorkDir, "mgr-webhook.log")
	c.step("starting mgr-webhook on https://%s:%d (log: %s)", wo.LocalServingHost, wo.LocalServingPort, logPath)
	cmd, err := testenv.Spawn(filepath.Join(binDir, "mgr-webhook"), logPath,
		"--kubeconfig", c.API.Kubeconfig,
		"--cert-dir", wo.LocalServingCertDir,
		"--host", wo.LocalServingHost, "--port", strconv.Itoa(wo.LocalServingPort),
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(probe)))
	if err != nil {
		return err
	}
	c.procs = append(c.procs, cmd)
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", probe)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		if cmd.Exited() {
			return false, fmt.Errorf("mgr-webhook exited; see %s", logPath)
		}
		resp, err := http.Get(readyz)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("mgr-webhook not ready: %w (log: %s)", err, logPath)
	}
	return nil
}

// Stop ends every process this cluster started and removes its files.
func (c *Cluster) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].Stop(10 * time.Second)
	}
	if c.API != nil {
		c.API.Stop()
	}
	if c.ownsDir {
		os.RemoveAll(c.WorkDir)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}

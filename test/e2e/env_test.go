// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package e2e is the end-to-end suite: the whole story on any cluster. With
// E2E_KUBECONFIG it runs against that cluster (kind: `make e2e-kind`), whose
// Ceph namespaces are named by E2E_CEPH_NAMESPACES and reached by `kubectl
// exec` into the bootstrap controller; without it, it starts the local
// cluster of real binaries (internal/harness/localcluster) with two Ceph clusters.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
	"github.com/rook-mgr/mgr-webhook/internal/harness/localcluster"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// Env is the cluster under test.
type Env struct {
	Client     client.Client
	Kubectl    string
	Kubeconfig string
	// Namespaces are two Ceph clusters' namespaces.
	Namespaces []string
	// Ports are the prometheus and dashboard container ports per namespace
	// and mgr id (locally every mgr shares the host; on kind, the defaults).
	Ports map[string]map[string][2]int32
	// Ceph runs the ceph CLI as client.admin against a namespace's cluster.
	Ceph func(ctx context.Context, ns string, args ...string) ([]byte, error)
	// Teardown is a third Ceph namespace that a test deletes whole
	// (E2E_TEARDOWN_NAMESPACE on another cluster).
	Teardown string
	// FinalizerTimeout is the controller's --finalizer-timeout.
	FinalizerTimeout time.Duration
	// SetPolicy runs the webhook with this policy file content; "" restores
	// the one it was installed with.
	SetPolicy func(ctx context.Context, policy string) error
	// Logs are the components' logs, by where they came from: their files
	// locally, their pods' containers (every replica) on another cluster.
	Logs func(ctx context.Context) (map[string]string, error)
	// MetricsURLs are the components' metrics endpoints, where the suite can
	// reach them (the local cluster).
	MetricsURLs map[string]string
	// Metrics fetches /metrics of the mgr behind the namespace's
	// rook-ceph-mgr Service, whose endpoint has port.
	Metrics func(ctx context.Context, ns string, port int32) (string, error)
	// CephImage replaces the example mgr's image when set
	// (E2E_CEPH_IMAGE: a real node holds only the Ceph image made here).
	CephImage string
	// installedPolicy is the remote webhook's policy before SetPolicy changed it.
	installedPolicy *string
	root            string
}

// finalizerTimeout is the local controller's, short so that a deletion whose
// Ceph cluster is gone is released quickly.
const finalizerTimeout = 20 * time.Second

var env *Env

func TestMain(m *testing.M) { testenv.Main(m, "e2e", run) }

func run(m *testing.M) (int, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return 1, err
	}
	ctx := context.Background()
	if kc := os.Getenv("E2E_KUBECONFIG"); kc != "" {
		if env, err = remoteEnv(ctx, root, kc); err != nil {
			return 1, err
		}
		return m.Run(), nil
	}
	c, err := localcluster.Start(ctx, localcluster.Options{
		RepoRoot: root, CephNamespaces: []string{"ceph-west", "ceph-east", "ceph-teardown"}, MoreNamespaces: []string{"ceph-undecodable-key"}, MgrIDs: []string{"a", "b"}, Log: os.Stderr,
		FinalizerTimeout: finalizerTimeout, Verbose: true,
	})
	if err != nil {
		return 1, err
	}
	defer c.Stop()
	// The mgrs name the release their daemons run (the ceph tools first in
	// PATH), which the release guard judges by.
	release, err := cephtest.Release()
	if err != nil {
		return 1, fmt.Errorf("the local daemons' release: %w", err)
	}
	env = &Env{Client: c.Client, Kubectl: c.API.Kubectl, Kubeconfig: c.API.Kubeconfig, Namespaces: []string{"ceph-west", "ceph-east"},
		Teardown: "ceph-teardown", FinalizerTimeout: finalizerTimeout, CephImage: "quay.io/ceph/ceph:v" + release.String(),
		Ports: map[string]map[string][2]int32{}, root: root, MetricsURLs: c.MetricsURLs}
	env.Logs = func(context.Context) (map[string]string, error) {
		logs := map[string]string{}
		for _, f := range c.LogFiles() {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			logs[f] = string(b)
		}
		return logs, nil
	}
	policyFile := filepath.Join(c.WorkDir, "policy.yaml")
	env.SetPolicy = func(ctx context.Context, policy string) error {
		if policy == "" {
			return c.RestartWebhook(ctx)
		}
		if err := os.WriteFile(policyFile, []byte(policy), 0o600); err != nil {
			return err
		}
		return c.RestartWebhook(ctx, "--policy="+policyFile)
	}
	for ns, cc := range c.Cephs {
		env.Ports[ns] = map[string][2]int32{}
		for id, p := range cc.MgrPorts {
			env.Ports[ns][id] = [2]int32{int32(p[0]), int32(p[1])}
		}
	}
	// The pods' IPs are kwok's; the mgr daemons listen on this host, each on
	// the port its container declares, which the endpoint carries.
	env.Metrics = func(ctx context.Context, _ string, port int32) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), nil)
		if err != nil {
			return "", err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s", resp.Status)
		}
		return string(b), err
	}
	runner := &ceph.Runner{ConnectTimeout: 5 * time.Second, Timeout: 30 * time.Second}
	env.Ceph = func(ctx context.Context, ns string, args ...string) ([]byte, error) {
		conn, err := connOf(ctx, ns)
		if err != nil {
			return nil, err
		}
		return runner.Run(ctx, conn, ceph.Command{Name: "e2e", Kind: ceph.Read, Args: args})
	}
	return m.Run(), nil
}

// connOf reads a namespace's mon_host and admin keyring, as the controller does.
func connOf(ctx context.Context, ns string) (ceph.Conn, error) {
	cfg, kr := &corev1.Secret{}, &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rook-ceph-config"}, cfg); err != nil {
		return ceph.Conn{}, err
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rook-ceph-admin-keyring"}, kr); err != nil {
		return ceph.Conn{}, err
	}
	return ceph.Conn{Cluster: ns, MonHost: string(cfg.Data["mon_host"]), AdminKeyring: kr.Data["keyring"]}, nil
}

// remoteEnv uses an existing cluster with the project installed (kind).
func remoteEnv(ctx context.Context, root, kubeconfig string) (*Env, error) {
	nss := strings.Split(os.Getenv("E2E_CEPH_NAMESPACES"), ",")
	if len(nss) < 2 || nss[0] == "" {
		return nil, fmt.Errorf("E2E_CEPH_NAMESPACES must name two namespaces holding Rook's Ceph cluster objects (rook-ceph-mon, rook-ceph-config, rook-ceph-admin-keyring)")
	}
	teardown := os.Getenv("E2E_TEARDOWN_NAMESPACE")
	if teardown == "" {
		return nil, fmt.Errorf("E2E_TEARDOWN_NAMESPACE must name a third namespace with Rook's Ceph cluster objects, which the suite deletes whole")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	kubectl := os.Getenv("E2E_KUBECTL")
	if kubectl == "" {
		if kubectl, err = exec.LookPath("kubectl"); err != nil {
			return nil, err
		}
	}
	e := &Env{Client: cl, Kubectl: kubectl, Kubeconfig: kubeconfig, Namespaces: nss[:2], Ports: map[string]map[string][2]int32{}, root: root,
		Teardown: teardown, FinalizerTimeout: 2 * time.Minute, CephImage: os.Getenv("E2E_CEPH_IMAGE")}
	e.SetPolicy = func(ctx context.Context, policy string) error { return e.setInstalledPolicy(ctx, policy) }
	// The mons are reachable from inside the cluster: run ceph in the
	// controller's pod, the admin keyring on stdin, never on a command line.
	e.Ceph = func(ctx context.Context, ns string, args ...string) ([]byte, error) {
		conn, err := connOf(ctx, ns)
		if err != nil {
			return nil, err
		}
		script := `umask 077; d=$(mktemp -d); cat > "$d/keyring"; printf '[global]\nmon_host = %s\n' "$MON" > "$d/conf"; ` +
			`ceph --conf "$d/conf" --keyring "$d/keyring" --connect-timeout=15 --format json "$@"; rc=$?; rm -rf "$d"; exit $rc`
		pod, err := e.livePod(ctx, "mgr-bootstrap")
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig, "exec", "-i", "-n", "mgr-webhook-system",
			pod, "--", "env", "MON=" + conn.MonHost, "sh", "-c", script, "sh"}, args...)...)
		cmd.Stdin = bytes.NewReader(conn.AdminKeyring)
		return cmd.Output()
	}
	e.Logs = func(ctx context.Context) (map[string]string, error) {
		pods := &corev1.PodList{}
		if err := e.Client.List(ctx, pods, client.InNamespace("mgr-webhook-system")); err != nil {
			return nil, err
		}
		logs := map[string]string{}
		for _, p := range pods.Items {
			for _, c := range p.Status.ContainerStatuses {
				out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "logs", "-n", p.Namespace, p.Name, "-c", c.Name).Output()
				if err != nil {
					return nil, fmt.Errorf("kubectl logs %s -c %s: %w", p.Name, c.Name, err)
				}
				logs[p.Name+"/"+c.Name] = string(out)
			}
		}
		return logs, nil
	}
	// Metrics come through the Service's cluster IP, fetched from inside the
	// cluster (the controller's pod has python3 with the ceph CLI), as
	// Prometheus scrapes them.
	e.Metrics = func(ctx context.Context, ns string, _ int32) (string, error) {
		svc := &corev1.Service{}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: contract.MetricsServiceName}, svc); err != nil {
			return "", err
		}
		url := fmt.Sprintf("http://%s:%d/metrics", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)
		pod, err := e.livePod(ctx, "mgr-bootstrap")
		if err != nil {
			return "", err
		}
		cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "exec", "-n", "mgr-webhook-system", pod, "--",
			"python3", "-c", "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())", url)
		out, err := cmd.Output()
		return string(out), err
	}
	return e, nil
}

// livePod names a Ready pod of the install's Deployment name on a Ready
// node, as kubectl exec takes it (pod/<name>): kubectl exec deploy/<name>
// may pick a replica on a node the suite has just lost.
func (e *Env) livePod(ctx context.Context, name string) (string, error) {
	pods := &corev1.PodList{}
	if err := e.Client.List(ctx, pods, client.InNamespace("mgr-webhook-system"), client.MatchingLabels{"app.kubernetes.io/name": name}); err != nil {
		return "", err
	}
	// Take turns: a node lost a moment ago still looks Ready, and a call
	// stuck on its pod must not be followed by another to the same.
	start := int(livePodTurn.Add(1))
	for i := range pods.Items {
		p := pods.Items[(start+i)%len(pods.Items)]
		node := &corev1.Node{}
		if p.DeletionTimestamp != nil || !podReady(&p) || e.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node) != nil || !nodeReady(node) {
			continue
		}
		return "pod/" + p.Name, nil
	}
	return "", fmt.Errorf("no Ready pod of %s on a Ready node", name)
}

// livePodTurn rotates livePod's first choice.
var livePodTurn atomic.Int64

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (e *Env) kubectl(t *testing.T, stdin []byte, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(e.Kubectl, append([]string{"--kubeconfig", e.Kubeconfig}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// manifest is the shipped minimal example for mgr id in ns, with this
// environment's module ports.
func (e *Env) manifest(t *testing.T, ns, id string, annotations map[string]string) []byte {
	t.Helper()
	m, err := testenv.MinimalMgr(e.root, ns, id, e.Ports[ns][id], annotations)
	if err != nil {
		t.Fatal(err)
	}
	if e.CephImage != "" {
		m = bytes.Replace(m, []byte("image: "+exampleImage), []byte("image: "+e.CephImage), 1)
	}
	return m
}

// exampleImage is the image of the shipped minimal example.
const exampleImage = "quay.io/ceph/ceph:v19.2.3"

// mgrImage is the image the suite's mgrs run.
func (e *Env) mgrImage() string {
	if e.CephImage != "" {
		return e.CephImage
	}
	return exampleImage
}

// mgrMajor is the Ceph major release of mgrImage (16 for v16.2.15).
func (e *Env) mgrMajor(t *testing.T) int {
	t.Helper()
	img := e.mgrImage()
	var major int
	if _, err := fmt.Sscanf(img[strings.LastIndex(img, ":v")+2:], "%d", &major); err != nil {
		t.Fatalf("the Ceph release of image %s: %v", img, err)
	}
	return major
}

// setInstalledPolicy changes the policy of the installed webhook: it writes
// policy.yaml of the ConfigMap the webhook Deployment mounts (keeping the
// installed content to restore on ""), then restarts the Deployment and waits
// for the rollout.
func (e *Env) setInstalledPolicy(ctx context.Context, policy string) error {
	run := func(stdin []byte, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, e.Kubectl, append([]string{"--kubeconfig", e.Kubeconfig, "-n", "mgr-webhook-system"}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	cm, err := run(nil, "get", "deployment", "mgr-webhook", "-o", `jsonpath={.spec.template.spec.volumes[?(@.name=="policy")].configMap.name}`)
	if err != nil {
		return err
	}
	if e.installedPolicy == nil {
		current, err := run(nil, "get", "configmap", cm, "-o", `jsonpath={.data.policy\.yaml}`)
		if err != nil {
			return err
		}
		e.installedPolicy = &current
	}
	if policy == "" {
		policy = *e.installedPolicy
	}
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{"policy.yaml": policy}})
	if _, err := run(nil, "patch", "configmap", cm, "--type=merge", "-p", string(patch)); err != nil {
		return err
	}
	if _, err := run(nil, "rollout", "restart", "deployment/mgr-webhook"); err != nil {
		return err
	}
	if _, err = run(nil, "rollout", "status", "deployment/mgr-webhook", "--timeout=3m"); err != nil {
		return err
	}
	// The rollout is complete before the old replicas are gone: while they
	// drain they still answer (with the old policy) on the connections the
	// API server holds. The new policy holds once they have exited.
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := e.Client.List(ctx, pods, client.InNamespace("mgr-webhook-system"), client.MatchingLabels{"app.kubernetes.io/name": "mgr-webhook"}); err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				return false, nil
			}
		}
		return true, nil
	})
}

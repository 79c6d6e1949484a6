// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package upgrade upgrades a running installation from the previous release
// to this checkout as a user does: `kubectl apply --server-side` of the
// previous release's install file, mgrs bootstrapped on a real Ceph cluster,
// then the new release's file applied and both components rolled one replica
// at a time, under admission load. No mgr pod may restart, no key change, no
// admission fail.
//
// The components run as local processes in place of their pods (kwok's pods
// run nothing), each with its release Deployment's own arguments, as its
// ServiceAccount; the webhook replicas are the endpoints of the release's
// Service, which the API server routes to as it does in a cluster.
package upgrade

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// previousRelease is the commit users upgrade from: the last release's tag
// commit (v0.1.0 in CHANGELOG.md, not yet tagged). After each release, set
// it to that release's commit.
const previousRelease = "f210a2c538f848f0606d1b482b9345dd159ef820"

const (
	installNamespace = "mgr-webhook-system"
	cephNamespace    = "rook-ceph"
)

// release is one version, built from its own tree.
type release struct {
	name string
	// bin holds its mgr-webhook and mgr-bootstrap.
	bin string
	// tree is its source tree: its chart, its minimal example mgr.
	tree string
	// file is its release file (hack/release.sh) without the components'
	// Deployments, whose pods the local processes stand in for; fromFile
	// are those Deployments and the policy.
	file     string
	fromFile components
}

// components are what an install runs: the Deployments whose arguments the
// processes take, and the policy file their ConfigMap mounts.
type components struct {
	webhook, controller *appsv1.Deployment
	policy              string
}

// previous extracts previousRelease from the repository's history. A
// checkout without it (a shallow clone, an export) cannot test the upgrade:
// that is a failure, not a skip.
func previous(t *testing.T, root string) string {
	t.Helper()
	tree := filepath.Join(t.TempDir(), "previous")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", previousRelease)
	untar := exec.Command("tar", "-x", "-C", tree)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	var archiveErr, untarErr strings.Builder
	archive.Stderr, untar.Stderr = &archiveErr, &untarErr
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("the previous release %s is not in this checkout's history (%v: %s): the upgrade test needs a full clone (git fetch --unshallow)", previousRelease, err, archiveErr.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("extracting %s: %v: %s", previousRelease, err, untarErr.String())
	}
	return tree
}

// build makes version's binaries and release file from tree.
func build(t *testing.T, ctx context.Context, tree, name, version string) *release {
	t.Helper()
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	r := &release{name: name, bin: t.TempDir(), tree: tree}
	// Each release's binaries from its own go.mod, as its images were (the
	// flags of testenv.BuildCommands, so the build cache serves both).
	ldflags := "-X github.com/rook-mgr/mgr-webhook/version.Version=" + version
	b := exec.CommandContext(ctx, "go", "build", "-ldflags", ldflags, "-o", r.bin+"/", "./cmd/mgr-webhook", "./cmd/mgr-bootstrap")
	b.Dir = tree
	if out, err := b.CombinedOutput(); err != nil {
		t.Fatalf("%s: go build: %v\n%s", name, err, out)
	}
	dist := t.TempDir()
	rel := exec.CommandContext(ctx, filepath.Join(tree, "hack", "release.sh"))
	rel.Env = append(os.Environ(), "VERSION="+version, "DIST="+dist, "KUBECTL="+filepath.Join(assets, "kubectl"))
	if out, err := rel.CombinedOutput(); err != nil {
		t.Fatalf("%s: hack/release.sh: %v\n%s", name, err, out)
	}
	data, err := os.ReadFile(filepath.Join(dist, "install-self-signed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The control plane's CIDR, as the README's install sets it (a release
	// with the NetworkPolicy holds a placeholder the API server refuses).
	data = []byte(strings.ReplaceAll(string(data), testenv.ControlPlaneCIDRPlaceholder, testenv.ControlPlaneCIDR))
	var kept []string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		switch {
		case u.GetKind() == "Deployment":
			d := &appsv1.Deployment{}
			if err := yaml.UnmarshalStrict([]byte(doc), d); err != nil {
				t.Fatal(err)
			}
			switch d.Name {
			case "mgr-webhook":
				r.fromFile.webhook = d
			case "mgr-bootstrap":
				r.fromFile.controller = d
			default:
				t.Fatalf("%s: unknown Deployment %s", name, d.Name)
			}
			continue
		case u.GetKind() == "ConfigMap" && strings.HasPrefix(u.GetName(), "mgr-webhook-policy"):
			policy, _, _ := unstructured.NestedString(u.Object, "data", "policy.yaml")
			r.fromFile.policy = writeTemp(t, atDaemonFloor(r, policy))
		}
		kept = append(kept, doc)
	}
	if r.fromFile.webhook == nil || r.fromFile.controller == nil || r.fromFile.policy == "" {
		t.Fatalf("%s: the release file lacks a component's Deployment or the policy ConfigMap", name)
	}
	r.file = writeTemp(t, strings.Join(kept, "\n---\n"))
	return r
}

// writeTemp writes content to a new file of the test's.
func writeTemp(t *testing.T, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "file.yaml")
	if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// args are the container arguments of d, with what its pod has from the
// cluster (mounted files, ports, the downward API) replaced by local ones.
func args(d *appsv1.Deployment, local ...string) []string {
	replaced := map[string]bool{}
	for _, a := range local {
		name, _, _ := strings.Cut(a, "=")
		replaced[name] = true
	}
	var out []string
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		name, _, _ := strings.Cut(a, "=")
		if replaced[name] {
			continue
		}
		// $(VAR) as the kubelet expands it: the env's values, and the pod's namespace.
		a = strings.ReplaceAll(a, "$(POD_NAMESPACE)", d.Namespace)
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.ValueFrom == nil {
				a = strings.ReplaceAll(a, "$("+e.Name+")", e.Value)
			}
		}
		out = append(out, a)
	}
	return append(out, local...)
}

// cluster is the control plane, the Ceph cluster and the components.
type cluster struct {
	t      *testing.T
	ctx    context.Context
	api    *testenv.APIServer
	k8s    client.Client
	ceph   *cephtest.Cluster
	hostIP string
}

// kubeconfigAs acts as the install's ServiceAccount sa.
func (c *cluster) kubeconfigAs(sa string) string {
	c.t.Helper()
	kc, err := c.api.KubeconfigAs(testenv.ServiceAccountUser(installNamespace, sa))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { os.Remove(kc) })
	return kc
}

// installs are the README's ways to install and upgrade, by name; each
// returns what it installed for the components.
var installs = map[string]func(c *cluster, r *release, upgrade bool) components{
	// kubectl apply --server-side -f install-self-signed.yaml, both times.
	"kubectl": func(c *cluster, r *release, _ bool) components {
		c.t.Helper()
		out, err := exec.Command(c.api.Kubectl, "--kubeconfig", c.api.Kubeconfig, "apply", "--server-side", "-f", r.file).CombinedOutput()
		if err != nil {
			c.t.Fatalf("%s: kubectl apply --server-side: %v\n%s", r.name, err, out)
		}
		return r.fromFile
	},
	// helm install, then helm upgrade, of each release's chart. No node
	// takes the chart's pods (they stay Pending, out of the Service's
	// endpoints); the processes run with its Deployments' arguments.
	"helm": func(c *cluster, r *release, upgrade bool) components {
		c.t.Helper()
		kubeconfig, ns := c.api.Kubeconfig, installNamespace
		cfg := new(action.Configuration)
		if err := cfg.Init(&genericclioptions.ConfigFlags{KubeConfig: &kubeconfig, Namespace: &ns}, ns, "secret", c.t.Logf); err != nil {
			c.t.Fatal(err)
		}
		ch, err := loader.Load(filepath.Join(r.tree, "charts", "mgr-webhook"))
		if err != nil {
			c.t.Fatal(err)
		}
		// The control plane's CIDR, which the chart requires from the release
		// that ships the NetworkPolicy on (and the earlier one accepts).
		vals, err := chartutil.ReadValues([]byte("webhook: {nodeSelector: {mgr-webhook.test/node: none}}\nbootstrap: {nodeSelector: {mgr-webhook.test/node: none}}\nnetworkPolicy: {controlPlaneCIDRs: [" + testenv.ControlPlaneCIDR + "]}\n"))
		if err != nil {
			c.t.Fatal(err)
		}
		if upgrade {
			up := action.NewUpgrade(cfg)
			up.Namespace, up.Timeout = ns, time.Minute
			if _, err := up.Run("mgr-webhook", ch, vals); err != nil {
				c.t.Fatalf("%s: helm upgrade: %v", r.name, err)
			}
		} else {
			inst := action.NewInstall(cfg)
			inst.ReleaseName, inst.Namespace, inst.CreateNamespace, inst.Timeout = "mgr-webhook", ns, true, time.Minute
			if _, err := inst.Run(ch, vals); err != nil {
				c.t.Fatalf("%s: helm install: %v", r.name, err)
			}
		}
		var in components
		in.webhook, in.controller = &appsv1.Deployment{}, &appsv1.Deployment{}
		for name, d := range map[string]*appsv1.Deployment{"mgr-webhook": in.webhook, "mgr-bootstrap": in.controller} {
			if err := c.k8s.Get(c.ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
				c.t.Fatal(err)
			}
		}
		for _, v := range in.webhook.Spec.Template.Spec.Volumes {
			if v.Name == "policy" && v.ConfigMap != nil {
				cm := &corev1.ConfigMap{}
				if err := c.k8s.Get(c.ctx, client.ObjectKey{Namespace: ns, Name: v.ConfigMap.Name}, cm); err != nil {
					c.t.Fatal(err)
				}
				in.policy = writeTemp(c.t, atDaemonFloor(r, cm.Data["policy.yaml"]))
			}
		}
		if in.policy == "" {
			c.t.Fatalf("%s: the chart's webhook mounts no policy ConfigMap", r.name)
		}
		return in
	},
}

// webhookReplica is one mgr-webhook process and its endpoint.
type webhookReplica struct {
	name string
	proc *testenv.Process
}

// startWebhook runs a replica of r's webhook Deployment and makes it an
// endpoint of the Service once ready, as the endpoint controller would.
func (c *cluster) startWebhook(r *release, in components, name string) *webhookReplica {
	c.t.Helper()
	port, err := testenv.FreePort()
	if err != nil {
		c.t.Fatal(err)
	}
	probe, err := testenv.FreePort()
	if err != nil {
		c.t.Fatal(err)
	}
	// StopAtCleanup prints the log when the test fails; a replica that never
	// gets ready prints it here.
	log := filepath.Join(c.t.TempDir(), name+".log")
	p, err := testenv.SpawnReady(c.ctx, filepath.Join(r.bin, "mgr-webhook"), log, probe, 90*time.Second,
		args(in.webhook, "--kubeconfig="+c.kubeconfigAs("mgr-webhook"), "--cert-dir="+c.t.TempDir(), "--host="+c.hostIP,
			"--port="+strconv.Itoa(port), "--policy="+in.policy, "--metrics-bind-address=0", "--namespace="+installNamespace, "--pod-name="+name)...)
	if err != nil {
		c.t.Fatalf("%s: %v\n%s", name, err, readLog(log))
	}
	p.StopAtCleanup(c.t, 10*time.Second)
	ready, proto, portName, pp := true, corev1.ProtocolTCP, "https", int32(port)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: installNamespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: "mgr-webhook", discoveryv1.LabelManagedBy: "mgr-webhook-tests",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{c.hostIP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &pp, Protocol: &proto}},
	}
	if err := c.k8s.Create(c.ctx, slice); err != nil {
		c.t.Fatal(err)
	}
	return &webhookReplica{name: name, proc: p}
}

// stopWebhook takes a replica out of the endpoints and sends it SIGTERM at
// once, as the kubelet and the endpoint controller do, and waits for it to
// drain and exit.
func (c *cluster) stopWebhook(w *webhookReplica) {
	c.t.Helper()
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: w.name, Namespace: installNamespace}}
	if err := c.k8s.Delete(c.ctx, slice); err != nil {
		c.t.Fatal(err)
	}
	c.terminate(w.name, w.proc)
}

func (c *cluster) terminate(name string, p *testenv.Process) {
	c.t.Helper()
	if err := syscall.Kill(p.Pid(), syscall.SIGTERM); err != nil {
		c.t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(c.ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return p.Exited(), nil
	}); err != nil {
		c.t.Fatalf("%s did not exit within 30s of SIGTERM", name)
	}
}

// controllerReplica is one mgr-bootstrap process.
type controllerReplica struct {
	name    string
	proc    *testenv.Process
	metrics string
}

// startController runs a replica of r's controller Deployment. The Ceph
// daemons run outside Kubernetes with keys this harness made, so the
// controller may adopt them (--adopt-existing-keys), and connects quickly.
func (c *cluster) startController(r *release, in components, name string) *controllerReplica {
	c.t.Helper()
	probe, err := testenv.FreePort()
	if err != nil {
		c.t.Fatal(err)
	}
	mport, err := testenv.FreePort()
	if err != nil {
		c.t.Fatal(err)
	}
	metrics := fmt.Sprintf("127.0.0.1:%d", mport)
	log := filepath.Join(c.t.TempDir(), name+".log")
	p, err := testenv.SpawnReady(c.ctx, filepath.Join(r.bin, "mgr-bootstrap"), log, probe, 90*time.Second,
		args(in.controller, "--kubeconfig="+c.kubeconfigAs("mgr-bootstrap"), "--policy="+in.policy, "--metrics-bind-address="+metrics,
			"--metrics-secure=false", "--pod-name="+name, "--adopt-existing-keys="+cephNamespace, "--ceph-connect-timeout=5s",
			"--ceph-binary="+testenv.ControllerCeph())...)
	if err != nil {
		c.t.Fatalf("%s: %v\n%s", name, err, readLog(log))
	}
	p.StopAtCleanup(c.t, 10*time.Second)
	return &controllerReplica{name: name, proc: p, metrics: "http://" + metrics + "/metrics"}
}

// reconciled is how many reconciles of mgrs the replica finished without error.
func (r *controllerReplica) reconciled(ctx context.Context) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.metrics, nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, `controller_runtime_reconcile_total{controller="mgr-bootstrap",result="success"}`) {
			n, _ := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
			return int(n)
		}
	}
	return 0
}

// readLog is a log's last 8 KiB.
func readLog(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	return string(b)
}

// load sends dry-run creates of a mgr through the API server, and so
// through both webhooks, until stopped.
type load struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	errs       []string
	stop       context.CancelFunc
	done       sync.WaitGroup
}

func startLoad(t *testing.T, k8s client.Client, manifest []byte) *load {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(manifest, d); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{stop: cancel}
	t.Cleanup(func() { cancel(); l.done.Wait() })
	for range 4 {
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			for ctx.Err() == nil {
				err := k8s.Create(context.Background(), d.DeepCopy(), client.DryRunAll)
				if err == nil {
					l.ok.Add(1)
					continue
				}
				l.failed.Add(1)
				l.mu.Lock()
				if len(l.errs) < 5 {
					l.errs = append(l.errs, time.Now().Format("15:04:05.000 ")+err.Error())
				}
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// carried waits for 20 more admissions to succeed: each step of the upgrade
// must carry load, however fast the machine, without a guessed time.
func (l *load) carried(t *testing.T, step string) {
	t.Helper()
	from := l.ok.Load()
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return l.ok.Load() >= from+20, nil
	}); err != nil {
		t.Fatalf("%s: %d admissions in a minute, want 20 (failed so far: %d: %v)", step, l.ok.Load()-from, l.failed.Load(), l.errs)
	}
}

// mgrState is what an upgrade must leave alone.
type mgrState struct {
	generation int64
	template   corev1.PodTemplateSpec
	pods       []string // UIDs
	sets       []string // ReplicaSet names
	keyring    string
	cephKey    string
	status     mgrstatus.Status
}

func (c *cluster) state(id string) mgrState {
	c.t.Helper()
	d := &appsv1.Deployment{}
	if err := c.k8s.Get(c.ctx, client.ObjectKey{Namespace: cephNamespace, Name: "rook-ceph-mgr-" + id}, d); err != nil {
		c.t.Fatal(err)
	}
	st, err := mgrstatus.Of(d)
	if err != nil {
		c.t.Fatal(err)
	}
	s := mgrState{generation: d.Generation, template: d.Spec.Template, status: st}
	sel := client.MatchingLabels{contract.LabelMgrID: id}
	pods := &corev1.PodList{}
	if err := c.k8s.List(c.ctx, pods, client.InNamespace(cephNamespace), sel); err != nil {
		c.t.Fatal(err)
	}
	for _, p := range pods.Items {
		s.pods = append(s.pods, string(p.UID))
	}
	sets := &appsv1.ReplicaSetList{}
	if err := c.k8s.List(c.ctx, sets, client.InNamespace(cephNamespace), sel); err != nil {
		c.t.Fatal(err)
	}
	for _, rs := range sets.Items {
		s.sets = append(s.sets, rs.Name)
	}
	slices.Sort(s.pods)
	slices.Sort(s.sets)
	sec := &corev1.Secret{}
	if err := c.k8s.Get(c.ctx, client.ObjectKey{Namespace: cephNamespace, Name: contract.KeyringSecretName(id)}, sec); err != nil {
		c.t.Fatal(err)
	}
	s.keyring = string(sec.Data[contract.KeyringKey])
	if s.cephKey, err = c.ceph.GetKey(c.ctx, "mgr."+id); err != nil {
		c.t.Fatal(err)
	}
	return s
}

// applyMgr applies manifest with kubectl (client-side, as a user or a GitOps
// tool does), retried until the webhook's cache has the cluster objects.
func (c *cluster) applyMgr(manifest []byte) {
	c.t.Helper()
	var out []byte
	// Until the webhook's cache has the cluster objects.
	if err := wait.PollUntilContextTimeout(c.ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		cmd := exec.Command(c.api.Kubectl, "--kubeconfig", c.api.Kubeconfig, "apply", "-f", "-")
		cmd.Stdin = strings.NewReader(string(manifest))
		var err error
		out, err = cmd.CombinedOutput()
		return err == nil, nil
	}); err != nil {
		c.t.Fatalf("kubectl apply of a mgr: %s", out)
	}
}

// waitReady waits for the controller to bring mgr id to Ready at its current
// generation, with its pod Ready.
func (c *cluster) waitReady(id string) {
	c.t.Helper()
	var st mgrstatus.Status
	var podReady bool
	err := wait.PollUntilContextTimeout(c.ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := c.k8s.Get(ctx, client.ObjectKey{Namespace: cephNamespace, Name: "rook-ceph-mgr-" + id}, d); err != nil {
			return false, nil
		}
		var err error
		if st, err = mgrstatus.Of(d); err != nil {
			return false, err
		}
		podReady = d.Status.ReadyReplicas == 1 && d.Status.UpdatedReplicas == 1 && d.Status.Replicas == 1
		return st.Phase == mgrstatus.PhaseReady && st.ObservedGeneration == d.Generation && podReady, nil
	})
	if err != nil {
		c.t.Fatalf("mgr %s never Ready (pod Ready: %v); last status %+v", id, podReady, st)
	}
}

func TestUpgradeFromPreviousRelease(t *testing.T) {
	ctx := t.Context()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := cephtest.Installed(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	prev := build(t, ctx, previous(t, root), "previous release "+previousRelease[:7], "v0.0.0-previous")
	next := build(t, ctx, root, "this checkout", "v0.0.0-next")
	t.Logf("%.1fs: both releases built", time.Since(began).Seconds())
	for _, way := range slices.Sorted(maps.Keys(installs)) {
		t.Run(way, func(t *testing.T) { upgrade(t, way, prev, next) })
	}
}

// upgrade installs prev the given way on a new cluster, brings a mgr up,
// and upgrades to next that way under load.
func upgrade(t *testing.T, way string, prev, next *release) {
	ctx := t.Context()
	began := time.Now()
	step := func(what string) { t.Logf("%5.1fs %s", time.Since(began).Seconds(), what) }
	var cc *cephtest.Cluster
	cephDone := make(chan error, 1)
	go func() {
		var err error
		cc, err = cephtest.Start(ctx, cephtest.Options{MgrIDs: []string{"a", "b"}})
		cephDone <- err
	}()
	t.Cleanup(func() {
		if cc != nil {
			cc.Stop()
		}
	})
	api, err := testenv.StartAPIServerWith(testenv.APIServerOptions{ServiceRouting: true, AdmissionPlugins: []string{"OwnerReferencesPermissionEnforcement"}})
	if err != nil {
		<-cephDone
		t.Fatal(err)
	}
	t.Cleanup(api.Stop)
	work, err := testenv.StartWorkloads(ctx, api)
	if err != nil {
		<-cephDone
		t.Fatal(err)
	}
	t.Cleanup(work.Stop)
	hostIP, err := testenv.HostIP()
	if err != nil {
		t.Fatal(err)
	}
	if err := <-cephDone; err != nil {
		t.Fatal(err)
	}
	step("control plane and Ceph up")
	c := &cluster{t: t, ctx: ctx, api: api, k8s: api.Client, ceph: cc, hostIP: hostIP}

	// The previous release, installed and at work.
	in := installs[way](c, prev, false)
	objs := testenv.CephCluster{Namespace: cephNamespace, FSID: cc.FSID, MonHost: cc.MonHost, Members: "a", AdminKeyring: cc.AdminKeyring}
	if err := objs.Create(ctx, c.k8s); err != nil {
		t.Fatal(err)
	}
	if err := c.k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "rook-ceph-mgr", Namespace: cephNamespace}}); err != nil {
		t.Fatal(err)
	}
	hooks := []*webhookReplica{c.startWebhook(prev, in, "mgr-webhook-old-1"), c.startWebhook(prev, in, "mgr-webhook-old-2")}
	c.waitCABundle()
	// Two of each, as the release's Deployments run.
	controllers := []*controllerReplica{c.startController(prev, in, "mgr-bootstrap-old-1"), c.startController(prev, in, "mgr-bootstrap-old-2")}

	manifest := func(tree, id string) []byte {
		t.Helper()
		p := cc.MgrPorts[id]
		m, err := testenv.MinimalMgr(tree, cephNamespace, id, [2]int32{int32(p[0]), int32(p[1])}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The daemons' release: the example's is an upgrade to the release
		// guard once the controller has read the cluster.
		if m, err = cephtest.AtDaemonRelease(m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	// The user's manifest of mgr a, as a GitOps repository holds it.
	mgrA := manifest(prev.tree, "a")
	c.applyMgr(mgrA)
	c.waitReady("a")
	before := c.state("a")
	step("mgr a Ready under the previous release")
	if len(before.pods) != 1 || len(before.sets) != 1 {
		t.Fatalf("before the upgrade: mgr a has pods %v and ReplicaSets %v, want one of each", before.pods, before.sets)
	}
	if !before.status.KeyOwned || before.cephKey == "" || !strings.Contains(before.keyring, before.cephKey) {
		t.Fatalf("before the upgrade: mgr a's key is not the controller's (status %+v)", before.status)
	}

	// The load: a new mgr admitted, dry run, through both webhooks.
	l := startLoad(t, c.k8s, manifest(next.tree, "load"))
	l.carried(t, "the previous release")

	// The upgrade, as the README has it: the new release file applied, then
	// each Deployment rolls (maxSurge 1, maxUnavailable 0).
	in = installs[way](c, next, true)
	l.carried(t, "the new release's objects applied")
	step("the new release's objects applied")
	for i, old := range hooks {
		fresh := c.startWebhook(next, in, fmt.Sprintf("mgr-webhook-new-%d", i+1))
		l.carried(t, "beside "+fresh.name)
		c.stopWebhook(old)
		hooks[i] = fresh
		l.carried(t, old.name+" gone")
	}
	step("the webhook rolled")
	for i, old := range controllers {
		fresh := c.startController(next, in, fmt.Sprintf("mgr-bootstrap-new-%d", i+1))
		c.terminate(old.name, old.proc)
		controllers[i] = fresh
		l.carried(t, old.name+" gone")
	}
	// Only the leader reconciles: a reconcile by a new replica is its lead.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		return controllers[0].reconciled(ctx)+controllers[1].reconciled(ctx) > 0, nil
	}); err != nil {
		t.Fatalf("no new controller replica led and reconciled the mgr")
	}
	l.carried(t, "the new controller leading")
	step("the controller rolled")
	if way == "kubectl" {
		// The README's last step from an install that bound both
		// components cluster-wide (previousRelease): apply prunes nothing. The new pair then works on
		// the new release's RoleBindings alone (mgr b below).
		out, err := exec.Command(c.api.Kubectl, "--kubeconfig", c.api.Kubeconfig, "delete", "--ignore-not-found", "clusterrolebinding", "mgr-webhook", "mgr-bootstrap").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl delete clusterrolebinding: %v\n%s", err, out)
		}
		step("the previous release's ClusterRoleBindings removed")
	}

	// A GitOps tool syncs the unchanged manifest through the new webhook.
	c.applyMgr(mgrA)
	l.carried(t, "mgr a applied again")
	// The new pair bootstraps a new mgr.
	c.applyMgr(manifest(next.tree, "b"))
	c.waitReady("b")
	c.waitReady("a")
	step("mgr a applied again, mgr b Ready")

	l.stop()
	l.done.Wait()
	t.Logf("upgrade from %s under load: %d admissions, %d failed", previousRelease[:7], l.ok.Load(), l.failed.Load())
	if l.failed.Load() != 0 {
		t.Errorf("%d of %d admissions failed during the upgrade; want none: %v", l.failed.Load(), l.ok.Load()+l.failed.Load(), l.errs)
	}

	after := c.state("a")
	if diff := cmp.Diff(before.template, after.template); after.generation != before.generation || diff != "" {
		t.Errorf("mgr a's pod template changed (generation %d -> %d): its pod restarts (-before +after):\n%s", before.generation, after.generation, diff)
	}
	if !slices.Equal(after.pods, before.pods) || !slices.Equal(after.sets, before.sets) {
		t.Errorf("mgr a's pods %v (ReplicaSets %v) became %v (%v): a restart", before.pods, before.sets, after.pods, after.sets)
	}
	if after.keyring != before.keyring {
		t.Error("mgr a's keyring Secret changed")
	}
	if after.cephKey != before.cephKey {
		t.Error("mgr a's key in Ceph changed")
	}
	if !after.status.KeyOwned || after.status.Phase != mgrstatus.PhaseReady {
		t.Errorf("mgr a's status after the upgrade: %+v", after.status)
	}
}

// waitCABundle waits for the webhook to inject its CA into both configurations.
func (c *cluster) waitCABundle() {
	c.t.Helper()
	if err := wait.PollUntilContextTimeout(c.ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if c.k8s.Get(ctx, client.ObjectKey{Name: "mgr-webhook"}, m) != nil || c.k8s.Get(ctx, client.ObjectKey{Name: "mgr-webhook"}, v) != nil {
			return false, nil
		}
		for _, h := range m.Webhooks {
			if len(h.ClientConfig.CABundle) == 0 {
				return false, nil
			}
		}
		for _, h := range v.Webhooks {
			if len(h.ClientConfig.CABundle) == 0 {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		c.t.Fatal("the webhook never injected its CA into its configurations")
	}
}

// atDaemonFloor lets this checkout's policy admit the release the local
// daemons run, as the harness's site policy does (localcluster.SitePolicy):
// the built-in minimum (19.2.0) refuses Pacific's mgrs, and the example's
// 19.2.3 is three majors from Pacific, which the release guard refuses once
// the controller has read the cluster. The previous release's policy is
// left as it shipped.
func atDaemonFloor(r *release, policy string) string {
	if r.tree == "" || !strings.HasPrefix(r.name, "this checkout") || strings.Contains(policy, "images:") {
		return policy
	}
	return strings.TrimRight(policy, "\n") + "\nimages: {minimumCephVersion: \"16.2.0\"}\n"
}

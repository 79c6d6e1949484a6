// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Command controller measures the bootstrap controller at scale: N mgr
// Deployments across namespaces (pods made Ready by kwok, one real Ceph
// cluster), the time until all are bootstrapped, ceph calls and API writes
// per mgr (from the controller's own metrics), the cost of a full resync at
// rest (a controller restart re-reconciles everything), and its peak RSS.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

func main() {
	n := flag.Int("n", 100, "mgr Deployments")
	namespaces := flag.Int("namespaces", 10, "namespaces they spread over")
	binDir := flag.String("bin-dir", "bin", "directory with mgr-bootstrap")
	fleet := flag.Bool("fleet", false, "measure a fleet of clusters instead (-clusters, -dark, -real, -rest)")
	var fo fleetOptions
	flag.IntVar(&fo.clusters, "clusters", 100, "fleet: Ceph namespaces, two mgrs each")
	flag.IntVar(&fo.dark, "dark", 10, "fleet: namespaces whose mon accepts and never answers")
	flag.IntVar(&fo.real, "real", 3, "fleet: real Ceph clusters serving the others")
	flag.DurationVar(&fo.rest, "rest", time.Minute, "fleet: how long the controller is measured at rest")
	flag.Parse()
	if *fleet {
		fo.binDir = *binDir
		if err := runFleet(fo); err != nil {
			fmt.Fprintln(os.Stderr, "fleet bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*n, *namespaces, *binDir); err != nil {
		fmt.Fprintln(os.Stderr, "controller bench:", err)
		os.Exit(1)
	}
}

func run(n, nss int, binDir string) (err error) {
	ctx := context.Background()
	cc, err := cephtest.Start(ctx, cephtest.Options{})
	if err != nil {
		return err
	}
	defer cc.Stop()
	api, stop, err := startControlPlane(ctx)
	if err != nil {
		return err
	}
	defer stop()
	cl := api.Client
	for i := range nss {
		ns := fmt.Sprintf("ceph-%d", i)
		if err := (testenv.CephCluster{Namespace: ns, FSID: cc.FSID, MonHost: cc.MonHost, Members: "a", AdminKeyring: cc.AdminKeyring}).Create(ctx, cl); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp("", "controller-bench-")
	if err != nil {
		return err
	}
	defer func() { keepLogOnFailure(dir, err) }()
	start := func() (*testenv.Process, int, error) {
		port, err := testenv.FreePort()
		if err != nil {
			return nil, 0, err
		}
		p, err := testenv.Spawn(filepath.Join(binDir, "mgr-bootstrap"), filepath.Join(dir, "bootstrap.log"),
			"--kubeconfig", api.Kubeconfig, "--leader-elect=false",
			// The real daemon's key mgr.a existed before the controller:
			// the module run's namespace adopts it (the key is otherwise
			// not the controller's to use, and mgr a stays in phase Error).
			"--adopt-existing-keys=ceph-modules",
			// No module by default: the N mgrs below want none (only mgr
			// "a" could be listed by Ceph); the module run's mgr chooses
			// the default modules, which the policy must then offer.
			"--modules=", "--module-choices="+strings.Join(contract.DefaultModules, ","), "--metrics-bind-address", "127.0.0.1:"+strconv.Itoa(port), "--metrics-secure=false", "--health-probe-bind-address", "0")
		return p, port, err
	}
	proc, port, err := start()
	if err != nil {
		return err
	}

	// N mgrs, ids unique in the one Ceph cluster. With one real mgr daemon,
	// only mgr "a" could be listed by Ceph, so these want no modules: the
	// cost per mgr is the keyring, the Services and the status. Module
	// enabling is measured by the tests against the real daemon.
	t0 := time.Now()
	for i := range n {
		ns := fmt.Sprintf("ceph-%d", i%nss)
		id := "m" + strconv.Itoa(i)
		if err := createMgr(ctx, cl, ns, id, cc.FSID, nil); err != nil {
			return err
		}
	}
	// A bound on a run that hangs, not a target: every ceph call for a
	// mgr's keys is a CLI run of about 0.4 s of CPU, 1,000 mgrs with one key
	// each took 619 s on 2 cores (2026-12-03), and each now has two (its own
	// and its server_addr key): 10 minutes was too short.
	if err := waitReady(ctx, cl, n, 45*time.Minute); err != nil {
		return fmt.Errorf("not all %d mgrs bootstrapped: %w", n, err)
	}
	elapsed := time.Since(t0)
	// The role watcher labels pods on its own clock (5 s): the run is done
	// when every mgr pod carries its mgr_role too.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := cl.List(ctx, pods, client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.Labels[contract.LabelMgrRole] == "" {
				return false, nil
			}
		}
		return len(pods.Items) >= n, nil
	}); err != nil {
		return fmt.Errorf("mgr pods not all labelled mgr_role (log %s)", filepath.Join(dir, "bootstrap.log"))
	}
	labelled := time.Since(t0)
	m, err := scrape(port)
	if err != nil {
		return err
	}
	peak, _ := testenv.MemoryKiB(proc.Pid(), "VmHWM")
	proc.Stop(10 * time.Second)

	// The same ceph call, one at a time with nothing else running: what the
	// run's calls would cost done serially, against which its wall time is
	// judged (the summed latency above is inflated by the contention itself).
	serial, err := serialCallSeconds(ctx, cc, 20)
	if err != nil {
		return err
	}

	// A full resync at rest: a fresh controller lists and reconciles every mgr.
	proc, port, err = start()
	if err != nil {
		return err
	}
	time.Sleep(15 * time.Second)
	r, err := scrape(port)
	if err != nil {
		return err
	}

	// One module run on the real mgr daemon "a": the seed's modules, planned
	// for the release it runs. Its ceph calls by command, from the same
	// controller's counters.
	moduleStart := time.Now()
	// In a namespace of its own: the modules are a cluster's, and the other
	// namespaces' mgrs ask for none.
	if err := (testenv.CephCluster{Namespace: "ceph-modules", FSID: cc.FSID, MonHost: cc.MonHost, Members: "a", AdminKeyring: cc.AdminKeyring}).Create(ctx, cl); err != nil {
		return err
	}
	if err := createMgr(ctx, cl, "ceph-modules", "a", cc.FSID, map[string]string{contract.AnnotationModules: strings.Join(contract.DefaultModules, ",")}); err != nil {
		return err
	}
	if err := waitReady(ctx, cl, n+1, 5*time.Minute); err != nil {
		return fmt.Errorf("mgr a's modules not Ready: %w", err)
	}
	moduleRun := time.Since(moduleStart)
	mod, err := scrape(port)
	if err != nil {
		return err
	}
	proc.Stop(10 * time.Second)

	fmt.Printf("| measure | value |\n|---|---|\n")
	fmt.Printf("| mgrs bootstrapped (keyring, 2 Services, pod Ready, status) | %d in %d namespaces |\n", n, nss)
	fmt.Printf("| time until all bootstrapped | %.1f s (and labelled mgr_role: %.1f s) |\n", elapsed.Seconds(), labelled.Seconds())
	fmt.Printf("| ceph calls per mgr | %.2f (writes %.2f); besides, the role watcher's %.0f `mgr stat` reads over the run |\n",
		(m["calls"]-m["cmd:mgr stat"])/float64(n), m["writes"]/float64(n), m["cmd:mgr stat"])
	keyCalls := m["calls"] - m["cmd:mgr stat"]
	fmt.Printf("| the same %.0f ceph calls made one at a time (%.0f ms each, measured serially) | %.1f s (wall / serial = %.2f) |\n",
		keyCalls, serial*1000, keyCalls*serial, elapsed.Seconds()/(keyCalls*serial))
	fmt.Printf("| their latency summed under contention (8 workers, 2 cores) | %.1f s |\n", m["seconds"])
	fmt.Printf("| API writes per mgr | %.2f |\n", m["apiWrites"]/float64(n))
	fmt.Printf("| full resync at rest (%d reconciles, 15 s) | %.0f ceph writes, %.0f API writes; %.0f ceph reads (%.0f `mgr stat` of the role watcher: %d clusters of %d mgrs, one per 5 s each) |\n",
		int(r["reconciles"]), r["writes"], r["apiWrites"], r["calls"]-r["writes"], r["cmd:mgr stat"], nss, n/nss)
	fmt.Printf("| controller peak RSS | %.1f MiB |\n", float64(peak)/1024)
	// The role watcher reads every cluster's mgr map meanwhile: its `mgr
	// stat` reads are counted apart from the module run's own calls.
	var cmds []string
	for k := range mod {
		if c, ok := strings.CutPrefix(k, "cmd:"); ok && mod[k] > r[k] && c != "mgr stat" {
			cmds = append(cmds, fmt.Sprintf("%s ×%.0f", c, mod[k]-r[k]))
		}
	}
	slices.Sort(cmds)
	roleReads := mod["cmd:mgr stat"] - r["cmd:mgr stat"]
	fmt.Printf("| module run, mgr a, the default modules (%s) | %.1f s from create to Ready; %.0f ceph calls of its own (%.0f writes): %s; besides, the role watcher's %.0f `mgr stat` reads of every cluster meanwhile |\n",
		strings.Join(contract.DefaultModules, ", "), moduleRun.Seconds(), mod["calls"]-r["calls"]-roleReads, mod["writes"]-r["writes"], strings.Join(cmds, ", "), roleReads)
	fmt.Printf("| API writes of the module run | %.0f |\n", mod["apiWrites"]-r["apiWrites"])
	return nil
}

// startControlPlane starts a real API server and the workload controllers
// with kwok pods, and makes the controller's namespace; stop ends them.
func startControlPlane(ctx context.Context) (*testenv.APIServer, func(), error) {
	api, err := testenv.StartAPIServer()
	if err != nil {
		return nil, nil, err
	}
	w, err := testenv.StartWorkloads(ctx, api)
	if err != nil {
		api.Stop()
		return nil, nil, err
	}
	stop := func() { w.Stop(); api.Stop() }
	// The controller's own namespace, where it keeps the key that seals its status.
	own := &corev1.Namespace{}
	own.Name = bootstrap.DefaultOptions().Namespace
	if err := api.Client.Create(ctx, own); err != nil {
		stop()
		return nil, nil, err
	}
	return api, stop, nil
}

// serialCallSeconds makes k `auth get-or-create-key` calls (the one ceph
// call a mgr costs) one after another, through the controller's runner, and
// returns their mean duration; the keys are removed after.
func serialCallSeconds(ctx context.Context, cc *cephtest.Cluster, k int) (float64, error) {
	r := &ceph.Runner{Timeout: 30 * time.Second}
	conn := ceph.Conn{Cluster: "serial", MonHost: cc.MonHost, AdminKeyring: []byte(cc.AdminKeyring)}
	var total time.Duration
	for i := range k {
		t0 := time.Now()
		if _, err := r.GetOrCreateKey(ctx, conn, fmt.Sprintf("mgr.serial%d", i), contract.DefaultCaps); err != nil {
			return 0, err
		}
		total += time.Since(t0)
	}
	for i := range k {
		if err := r.RemoveKey(ctx, conn, fmt.Sprintf("mgr.serial%d", i)); err != nil {
			return 0, err
		}
	}
	return total.Seconds() / float64(k), nil
}

// createMgr creates mgr id's Deployment, completed as the webhook would.
func createMgr(ctx context.Context, cl client.Client, ns, id, fsid string, annotations map[string]string) error {
	d := &appsv1.Deployment{}
	d.Name, d.Namespace = contract.DeploymentName(id), ns
	d.Labels = map[string]string{contract.LabelApp: contract.AppName, contract.LabelMgrID: id}
	d.Annotations = annotations
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1Container())
	res, errs := mutate.Complete(d, mutate.ClusterInfo{Namespace: ns, FSID: fsid}, benchPolicy)
	if len(errs) > 0 {
		return errs.ToAggregate()
	}
	return cl.Create(ctx, res.Deployment)
}

// benchPolicy is the default one with the mgrs of a cluster allowed on one
// node: the bench runs many mgrs per cluster on kwok's few fake nodes.
var benchPolicy = func() *mutate.Policy {
	p := mutate.DefaultPolicy()
	p.Placement.AllowMultiplePerNode = true
	return p
}()

// waitReady waits until n mgr Deployments have status Ready. When they do
// not in time, the error names some that are not, with their phase and
// lastError: a run that fails says why.
func waitReady(ctx context.Context, cl client.Client, n int, timeout time.Duration) error {
	var behind []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list := &appsv1.DeploymentList{}
		if err := cl.List(ctx, list, client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
			return false, nil
		}
		ready := 0
		behind = behind[:0]
		for _, d := range list.Items {
			st, err := mgrstatus.Of(&d)
			if err == nil && st.Phase == mgrstatus.PhaseReady {
				ready++
			} else if len(behind) < 5 {
				behind = append(behind, fmt.Sprintf("%s/%s in phase %q (%s)", d.Namespace, d.Name, st.Phase, st.LastError))
			}
		}
		return ready == n, nil
	})
	if err != nil {
		return fmt.Errorf("%w; not Ready, among others: %s", err, strings.Join(behind, "; "))
	}
	return nil
}

// scrape reads the controller's own counters from its metrics endpoint.
func scrape(port int) (map[string]float64, error) {
	var resp *http.Response
	var err error
	for range 50 {
		if resp, err = http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port)); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		name := line[:i]
		switch {
		case strings.HasPrefix(name, "mgr_bootstrap_ceph_calls_total"):
			out["calls"] += v
			if _, rest, ok := strings.Cut(name, `command="`); ok {
				out["cmd:"+rest[:strings.IndexByte(rest, '"')]] += v
			}
			if strings.Contains(name, `kind="write"`) {
				out["writes"] += v
			}
			if strings.Contains(name, `result="unavailable"`) {
				out["unavailable"] += v
			}
		case strings.HasPrefix(name, "mgr_bootstrap_ceph_call_duration_seconds_sum"):
			out["seconds"] += v
		case name == "mgr_bootstrap_api_writes_total":
			out["apiWrites"] += v
		case name == "mgr_bootstrap_reconciles_total":
			out["reconciles"] += v
		}
	}
	return out, sc.Err()
}

// keepLogOnFailure removes the bench's directory after a run that succeeded.
// After a failure it keeps it and prints the end of the controller's log:
// the log is what explains the failure.
func keepLogOnFailure(dir string, err error) {
	if err == nil {
		os.RemoveAll(dir)
		return
	}
	log, _ := os.ReadFile(filepath.Join(dir, "bootstrap.log"))
	lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
	fmt.Fprintf(os.Stderr, "the controller's log is kept in %s; its last lines:\n%s\n", dir, strings.Join(lines[max(0, len(lines)-40):], "\n"))
}

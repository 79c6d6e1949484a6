// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// fleetOptions size the fleet run.
type fleetOptions struct {
	clusters, dark, real int
	rest                 time.Duration
	binDir               string
}

// fleetCluster is one namespace of the fleet and where its mon is.
type fleetCluster struct {
	ns   string
	fsid string
	real *cephtest.Cluster // nil: its mon is the blackhole
}

// runFleet measures the controller over a fleet: o.clusters namespaces of two
// mgrs (a, b) each. o.real real Ceph clusters (a mon, mgrs a and b) serve
// every namespace but o.dark, whose mon_host is a listener that accepts and
// never answers. Several namespaces share one real cluster: to the
// controller each namespace is a cluster of its own (its own Secrets,
// connection, breaker and schedule), and a failover of a real cluster is one
// for each of them, which is what the run measures.
func runFleet(o fleetOptions) (err error) {
	ctx := context.Background()
	hole, err := blackhole()
	if err != nil {
		return err
	}
	defer hole.Close()
	reals := make([]*cephtest.Cluster, o.real)
	for i := range reals {
		if reals[i], err = cephtest.Start(ctx, cephtest.Options{MgrIDs: []string{"a", "b"}}); err != nil {
			return err
		}
		defer reals[i].Stop()
	}
	api, stop, err := startControlPlane(ctx)
	if err != nil {
		return err
	}
	defer stop()
	cl := api.Client

	var fleet []fleetCluster
	for i := range o.clusters {
		c := fleetCluster{ns: fmt.Sprintf("fleet-%03d", i)}
		cc := testenv.CephCluster{Namespace: c.ns, FSID: "00000000-0000-0000-0000-000000000000", MonHost: "v2:" + hole.Addr().String(), Members: "a", AdminKeyring: reals[0].AdminKeyring}
		if i >= o.dark {
			c.real = reals[i%o.real]
			cc.FSID, cc.MonHost, cc.AdminKeyring = c.real.FSID, c.real.MonHost, c.real.AdminKeyring
		}
		if err := cc.Create(ctx, cl); err != nil {
			return err
		}
		c.fsid = cc.FSID
		fleet = append(fleet, c)
	}
	dir, err := os.MkdirTemp("", "fleet-bench-")
	if err != nil {
		return err
	}
	defer func() { keepLogOnFailure(dir, err) }()
	logPath := filepath.Join(dir, "bootstrap.log")
	port, err := testenv.FreePort()
	if err != nil {
		return err
	}
	// The namespaces share the real clusters' mgr.a and mgr.b keys: each
	// controller-side cluster adopts them.
	proc, err := testenv.Spawn(filepath.Join(o.binDir, "mgr-bootstrap"), logPath,
		"--kubeconfig", api.Kubeconfig, "--leader-elect=false", "--adopt-existing-keys=*",
		"--modules=", "--metrics-bind-address", "127.0.0.1:"+strconv.Itoa(port),
		"--metrics-secure=false", "--health-probe-bind-address", "0")
	if err != nil {
		return err
	}
	defer proc.Stop(10 * time.Second)

	t0 := time.Now()
	for _, c := range fleet {
		for _, id := range []string{"a", "b"} {
			if err := createMgr(ctx, cl, c.ns, id, c.fsid, nil); err != nil {
				return err
			}
		}
	}
	healthy := (o.clusters - o.dark) * 2
	if err := waitReady(ctx, cl, healthy, 15*time.Minute); err != nil {
		return fmt.Errorf("the healthy clusters' %d mgrs not all bootstrapped (log %s)", healthy, logPath)
	}
	bootstrapped := time.Since(t0)
	mon := &ceph.Monitor{Python: mustPython(), Timeout: 5 * time.Second}
	defer mon.Close()
	actives := map[*cephtest.Cluster]string{}
	for _, rc := range reals {
		st, err := mon.MgrStat(ctx, ceph.Conn{Cluster: rc.FSID, MonHost: rc.MonHost, AdminKeyring: []byte(rc.AdminKeyring)})
		if err != nil {
			return err
		}
		actives[rc] = st.ActiveName
	}
	if _, err := waitFollowed(ctx, cl, fleet, actives, time.Now(), 2*time.Minute); err != nil {
		return fmt.Errorf("labels: %w (log %s)", err, logPath)
	}
	labelled := time.Since(t0)

	// At rest: every healthy mgr bootstrapped and labelled, the dark ones
	// failing. The controller's CPU and its children's (the ceph CLI, the
	// mgr map reader), its ceph calls and its API writes over o.rest.
	m0, err := scrape(port)
	if err != nil {
		return err
	}
	cpu0 := treeCPU(proc.Pid())
	time.Sleep(o.rest)
	cpu1 := treeCPU(proc.Pid())
	m1, err := scrape(port)
	if err != nil {
		return err
	}
	minutes := o.rest.Minutes()

	// Failover of every real cluster at once, the dark ones still dark: each
	// namespace's labels and Service endpoints must follow its cluster's new
	// active mgr.
	for _, rc := range reals {
		if err := waitStandby(ctx, mon, rc); err != nil {
			return err
		}
	}
	failAt := time.Now()
	for _, rc := range reals {
		if _, err := rc.Ceph(ctx, "mgr", "fail", actives[rc]); err != nil {
			return err
		}
	}
	changed := map[*cephtest.Cluster]time.Time{}
	for _, rc := range reals {
		conn := ceph.Conn{Cluster: rc.FSID, MonHost: rc.MonHost, AdminKeyring: []byte(rc.AdminKeyring)}
		old := actives[rc]
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			st, err := mon.MgrStat(ctx, conn)
			if err == nil && st.Available && st.ActiveName != old {
				actives[rc] = st.ActiveName
				return true, nil
			}
			return false, nil
		}); err != nil {
			return fmt.Errorf("the mgr map of a real cluster never changed after mgr fail %s", old)
		}
		changed[rc] = time.Now()
	}
	follow, err := waitFollowed(ctx, cl, fleet, actives, failAt, 2*time.Minute)
	if err != nil {
		return fmt.Errorf("failover: %w (log %s)", err, logPath)
	}
	var took []time.Duration
	for c, at := range follow {
		took = append(took, at.Sub(changed[c.real]))
	}
	slices.Sort(took)
	peak, _ := testenv.MemoryKiB(proc.Pid(), "VmHWM")
	helperPeak := 0
	for _, pid := range descendants(proc.Pid()) {
		if kib, err := testenv.MemoryKiB(pid, "VmHWM"); err == nil && kib > helperPeak {
			helperPeak = kib
		}
	}

	perCluster := func(v float64) float64 { return v / float64(o.clusters) / minutes }
	fmt.Printf("| measure | value |\n|---|---|\n")
	fmt.Printf("| fleet | %d clusters (namespaces) × 2 mgrs; %d served by %d real Ceph clusters (mon + mgrs a, b), %d with a blackholed mon (accepts, never answers) |\n",
		o.clusters, o.clusters-o.dark, o.real, o.dark)
	fmt.Printf("| healthy mgrs bootstrapped | %d in %.1f s (labelled mgr_role: %.1f s) |\n", healthy, bootstrapped.Seconds(), labelled.Seconds())
	fmt.Printf("| at rest (%s): controller + children CPU | **%.3f cores** |\n", o.rest, (cpu1-cpu0)/o.rest.Seconds())
	fmt.Printf("| at rest: ceph calls per cluster per minute | %.2f (`mgr stat` over kept connections %.2f, CLI %.2f); unavailable %.2f |\n",
		perCluster(m1["calls"]-m0["calls"]), perCluster(m1["cmd:mgr stat"]-m0["cmd:mgr stat"]),
		perCluster((m1["calls"]-m1["cmd:mgr stat"])-(m0["calls"]-m0["cmd:mgr stat"])), perCluster(m1["unavailable"]-m0["unavailable"]))
	fmt.Printf("| at rest: API writes per cluster per minute | %.2f |\n", perCluster(m1["apiWrites"]-m0["apiWrites"]))
	fmt.Printf("| failover of the %d real clusters at once (`ceph mgr fail`), followed by labels and both Services' endpoints, from the mgr map's change | %d namespaces: p50 %.1f s, max **%.1f s** |\n",
		o.real, len(took), took[len(took)/2].Seconds(), took[len(took)-1].Seconds())
	fmt.Printf("| peak RSS | controller %.1f MiB; mgr map reader %.1f MiB |\n", float64(peak)/1024, float64(helperPeak)/1024)
	return nil
}

// blackhole is a mon address that accepts connections and never answers.
func blackhole() (net.Listener, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				mu.Lock()
				for _, c := range held {
					c.Close()
				}
				mu.Unlock()
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	return l, nil
}

func mustPython() string {
	py, err := ceph.PythonOf("ceph")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet bench:", err)
		os.Exit(1)
	}
	return py
}

// waitStandby waits until rc's mgr map shows a standby: a failover then
// has a mgr to promote.
func waitStandby(ctx context.Context, mon *ceph.Monitor, rc *cephtest.Cluster) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		out, err := rc.Ceph(ctx, "mgr", "dump", "--format", "json")
		if err != nil {
			return false, nil
		}
		var m struct {
			Standbys []json.RawMessage `json:"standbys"`
		}
		return json.Unmarshal(out, &m) == nil && len(m.Standbys) > 0, nil
	})
}

// waitFollowed waits until every healthy namespace's pods and both Services
// show its real cluster's active mgr, and returns when each first did.
func waitFollowed(ctx context.Context, cl client.Client, fleet []fleetCluster, actives map[*cephtest.Cluster]string, since time.Time, bound time.Duration) (map[fleetCluster]time.Time, error) {
	at := map[fleetCluster]time.Time{}
	var behind []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, bound, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		eps := &discoveryv1.EndpointSliceList{}
		if cl.List(ctx, pods, client.MatchingLabels{contract.LabelApp: contract.AppName}) != nil || cl.List(ctx, eps) != nil {
			return false, nil
		}
		now := time.Now()
		role := map[string]string{}  // namespace/pod -> mgr_role
		mgrOf := map[string]string{} // namespace/pod -> mgr id
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				role[p.Namespace+"/"+p.Name] = p.Labels[contract.LabelMgrRole]
				mgrOf[p.Namespace+"/"+p.Name] = p.Labels[contract.LabelMgrID]
			}
		}
		behind = behind[:0]
		for _, c := range fleet {
			if c.real == nil {
				continue
			}
			if _, done := at[c]; done {
				continue
			}
			if followed(c.ns, actives[c.real], role, mgrOf, eps.Items) {
				at[c] = now
			} else {
				behind = append(behind, c.ns)
			}
		}
		return len(behind) == 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%d namespaces did not follow within %s of %s: %v", len(behind), bound, since.Format(time.TimeOnly), behind)
	}
	return at, nil
}

// followed: ns's pods say active alone is active, and both cluster Services
// have active's pod as their only ready endpoint.
func followed(ns, active string, role, mgrOf map[string]string, eps []discoveryv1.EndpointSlice) bool {
	for key, r := range role {
		if strings.HasPrefix(key, ns+"/") && (mgrOf[key] == active) != (r == contract.RoleActive) {
			return false
		}
	}
	for _, svc := range []string{contract.MetricsServiceName, contract.DashboardServiceName} {
		var ready []string
		for _, s := range eps {
			if s.Namespace != ns || s.Labels[discoveryv1.LabelServiceName] != svc {
				continue
			}
			for _, e := range s.Endpoints {
				if e.TargetRef != nil && e.Conditions.Ready != nil && *e.Conditions.Ready {
					ready = append(ready, mgrOf[ns+"/"+e.TargetRef.Name])
				}
			}
		}
		if len(ready) != 1 || ready[0] != active {
			return false
		}
	}
	return true
}

// treeCPU is the CPU seconds of pid, of its children it has reaped, and of
// its living descendants.
func treeCPU(pid int) float64 {
	const ticks = 100 // USER_HZ
	total := 0.0
	for i, p := range append([]int{pid}, descendants(pid)...) {
		f := statFields(p)
		if len(f) < 17 {
			continue
		}
		for j := 13; j <= 14 || (i == 0 && j <= 16); j++ { // utime, stime (+ cutime, cstime of the root)
			v, _ := strconv.ParseFloat(f[j], 64)
			total += v / ticks
		}
	}
	return total
}

// descendants are the living processes below pid.
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(p); len(f) > 3 {
			parent[p], _ = strconv.Atoi(f[3])
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// statFields are /proc/pid/stat's fields, the command name (which may hold
// spaces) counted as one.
func statFields(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return append([]string{s[:strings.IndexByte(s, ' ')], s[strings.IndexByte(s, '(') : i+1]}, strings.Fields(s[i+1:])...)
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package faults

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
	"github.com/rook-mgr/mgr-webhook/internal/harness/localcluster"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/test/internal/await"
)

// leaseName is mgr-bootstrap's leader election Lease.
const leaseName = "mgr-bootstrap.mgr.ceph.rook.io"

// work is what one replica did: ceph calls, ceph writes, API writes, reconciles.
type work struct{ calls, writes, apiWrites, reconciles float64 }

func (w work) String() string {
	return fmt.Sprintf("%.0f ceph calls (%.0f writes), %.0f API writes, %.0f reconciles", w.calls, w.writes, w.apiWrites, w.reconciles)
}

// logsOnFailure prints the end of every component's log when t failed: a
// few lines each, so that a CI excerpt of the output's end still shows the
// failure above them.
func logsOnFailure(t *testing.T) {
	if !t.Failed() {
		return
	}
	for _, f := range lc.LogFiles() {
		data, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		t.Logf("last lines of %s:\n%s", f, strings.Join(lines[max(0, len(lines)-8):], "\n"))
	}
}

func metricOf(t *testing.T, replica int, name string, match map[string]string) float64 {
	t.Helper()
	v, err := testenv.ScrapeSum(lc.MetricsURLs[localcluster.BootstrapName(replica)], name, match)
	if err != nil {
		t.Fatalf("%s: %v", localcluster.BootstrapName(replica), err)
	}
	return v
}

func workOf(t *testing.T, replica int) work {
	t.Helper()
	return work{
		calls:      metricOf(t, replica, "mgr_bootstrap_ceph_calls_total", nil),
		writes:     metricOf(t, replica, "mgr_bootstrap_ceph_calls_total", map[string]string{"kind": "write"}),
		apiWrites:  metricOf(t, replica, "mgr_bootstrap_api_writes_total", nil),
		reconciles: metricOf(t, replica, "mgr_bootstrap_reconciles_total", nil),
	}
}

// leader waits until exactly one running replica says it leads, and returns it.
func leader(t *testing.T, timeout time.Duration) int {
	t.Helper()
	lead := -1
	await.For(t, timeout, "one mgr-bootstrap replica leading", func() bool {
		lead = -1
		for i := range 2 {
			if p := lc.Bootstrap(i); p == nil || p.Exited() {
				continue
			}
			if metricOf(t, i, "leader_election_master_status", map[string]string{"name": leaseName}) == 1 {
				if lead >= 0 {
					t.Fatalf("replicas %d and %d both lead", lead, i)
				}
				lead = i
			}
		}
		return lead >= 0
	})
	return lead
}

func apply(t *testing.T, namespace, id string) error {
	t.Helper()
	ports := [2]int32{}
	if p, ok := lc.Cephs[ns].MgrPorts[id]; ok && namespace == ns {
		ports = [2]int32{int32(p[0]), int32(p[1])}
	}
	m, err := testenv.MinimalMgr(root, namespace, id, ports, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The release the cluster's daemons run: the example's image names
	// another, which the release guard judges as an upgrade (refused
	// across three majors on Pacific) once the controller has recorded
	// the cluster, a moment that depends on the suite's timing.
	if m, err = cephtest.AtDaemonRelease(m); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(lc.API.Kubectl, "--kubeconfig", lc.API.Kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(string(m))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl apply: %v: %s", err, out)
	}
	return nil
}

func statusOf(t *testing.T, namespace, id string) mgrstatus.Status {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := lc.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "rook-ceph-mgr-" + id}, d); err != nil {
		t.Fatal(err)
	}
	st, err := mgrstatus.Of(d)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func keyringOf(t *testing.T, namespace, id string) string {
	t.Helper()
	s := &corev1.Secret{}
	if err := lc.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: contract.KeyringSecretName(id)}, s); err != nil {
		return ""
	}
	return string(s.Data["keyring"])
}

// owned lists the Secrets and Services that name the Deployment as owner, as kind/name.
func owned(t *testing.T, namespace string, uid types.UID) []string {
	t.Helper()
	ctx := t.Context()
	var names []string
	add := func(kind string, m metav1.Object) {
		for _, r := range m.GetOwnerReferences() {
			if r.UID == uid {
				names = append(names, kind+"/"+m.GetName())
			}
		}
	}
	secrets := &corev1.SecretList{}
	services := &corev1.ServiceList{}
	if err := lc.Client.List(ctx, secrets, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	if err := lc.Client.List(ctx, services, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	for i := range secrets.Items {
		add("Secret", &secrets.Items[i])
	}
	for i := range services.Items {
		add("Service", &services.Items[i])
	}
	slices.Sort(names)
	return names
}

func enabledModules(t *testing.T) []string {
	t.Helper()
	on, err := lc.Cephs[ns].EnabledModules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return on
}

// TestLeaderKilledMidModuleEnable: the leading replica is SIGKILLed (no
// lease release, as on a node failure) after its first `mgr module enable`;
// the standby, which did no work while it waited, takes over once the lease
// expires and finishes the run: every module on, the cephx key the one
// created before the kill, no object twice.
func TestLeaderKilledMidModuleEnable(t *testing.T) {
	defer logsOnFailure(t)
	ctx := t.Context()
	lead := leader(t, time.Minute)
	standby := 1 - lead
	if err := apply(t, ns, "a"); err != nil {
		t.Fatal(err)
	}
	enableCmd := map[string]string{"command": "mgr module enable"}
	await.For(t, 2*time.Minute, "the leader enabling a module", func() bool {
		return metricOf(t, lead, "mgr_bootstrap_ceph_calls_total", enableCmd) >= 1
	})
	keyring := keyringOf(t, ns, "a")
	idle := workOf(t, standby)
	leaderWork := workOf(t, lead)
	lc.Bootstrap(lead).Kill()
	killed := time.Now()
	onAtKill := enabledModules(t)
	if st := statusOf(t, ns, "a"); st.Phase == mgrstatus.PhaseReady {
		t.Fatalf("the module run ended before the kill (status %+v): the kill must come mid-run", st)
	}
	if idle != (work{}) {
		t.Errorf("the standby worked while the leader led: %s; want none", idle)
	}
	if keyring == "" {
		t.Fatal("no keyring Secret before the kill")
	}

	if got := leader(t, 30*time.Second); got != standby {
		t.Fatalf("replica %d leads after the kill; want the standby %d", got, standby)
	}
	takeover := time.Since(killed)
	var st mgrstatus.Status
	await.For(t, 2*time.Minute, "mgr a Ready after the hand-over", func() bool {
		st = statusOf(t, ns, "a")
		return st.Phase == mgrstatus.PhaseReady
	})
	ready := time.Since(killed)
	after := workOf(t, standby)
	enables := metricOf(t, standby, "mgr_bootstrap_ceph_calls_total", enableCmd)
	backend := metricOf(t, standby, "mgr_bootstrap_ceph_call_duration_seconds", map[string]string{"command": "orch set backend"})
	t.Logf("leader %s killed after %s, modules on then %v; the standby led %s later, mgr Ready %s after the kill; the new leader: %s, %.0f module enables; `orch set backend` took %.1fs of its run",
		localcluster.BootstrapName(lead), leaderWork, onAtKill, takeover.Round(100*time.Millisecond), ready.Round(100*time.Millisecond), after, enables, backend)

	on := enabledModules(t)
	for _, m := range contract.DefaultModules {
		if !slices.Contains(on, m) && !slices.Contains(st.Modules, m) {
			t.Errorf("module %s not on after the hand-over (enabled %v, status %v)", m, on, st.Modules)
		}
	}
	if !st.Dashboard || st.Backend != "rook" {
		t.Errorf("status %+v: want the dashboard done and the backend set", st)
	}
	// Only what the killed leader left undone was enabled again. Judged by
	// the modules the new leader's plan enabled (its Event), not by its
	// calls: a call that met a restarting mgr is retried, and counts twice.
	if enables > 0 {
		var note string
		await.For(t, 30*time.Second, "the new leader's "+bootstrap.ReasonModulesEnabled+" Event", func() bool {
			notes, err := testenv.DeploymentEvents(ctx, lc.Client, ns, "rook-ceph-mgr-a")
			if err != nil {
				t.Fatal(err)
			}
			note = notes[bootstrap.ReasonModulesEnabled]
			return note != ""
		})
		left := missing(contract.DefaultModules, onAtKill)
		for _, m := range strings.Fields(strings.Trim(note[strings.Index(note, "[")+1:], "]")) {
			if !slices.Contains(left, m) {
				t.Errorf("the new leader enabled %s (%q, %.0f calls); at the kill %v were on, so only %v were left", m, note, enables, onAtKill, left)
			}
		}
	}
	key, err := lc.Cephs[ns].GetKey(ctx, "mgr.a")
	if err != nil {
		t.Fatal(err)
	}
	if now := keyringOf(t, ns, "a"); now != keyring || !strings.Contains(now, "key = "+key+"\n") {
		t.Errorf("the keyring Secret changed over the hand-over or does not hold Ceph's key for mgr.a")
	}
	d := &appsv1.Deployment{}
	if err := lc.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rook-ceph-mgr-a"}, d); err != nil {
		t.Fatal(err)
	}
	want := []string{"Secret/" + contract.KeyringSecretName("a"), "Secret/" + contract.ServerAddrKeyringSecretName("a"), "Service/" + contract.MetricsServiceName, "Service/" + contract.DashboardServiceName}
	if got := owned(t, ns, d.UID); !slices.Equal(got, want) {
		t.Errorf("objects owned by the mgr: %v; want %v", got, want)
	}

	// The killed replica comes back as the standby.
	if err := lc.StartBootstrap(ctx, lead); err != nil {
		t.Fatal(err)
	}
	if got := leader(t, 5*time.Second); got != standby {
		t.Fatalf("replica %d leads after the restart; want %d still", got, standby)
	}
}

// TestGracefulHandOver: SIGTERM to the leader releases its lease, so the
// standby leads within the lease's retry period instead of its duration, and
// a new leader finds the bootstrapped mgrs at rest: no ceph call, no API write.
func TestGracefulHandOver(t *testing.T) {
	defer logsOnFailure(t)
	ctx := t.Context()
	if st := statusOf(t, ns, "a"); st.Phase != mgrstatus.PhaseReady {
		t.Fatalf("mgr a not bootstrapped (status %+v); TestLeaderKilledMidModuleEnable runs first", st)
	}
	lead := leader(t, time.Minute)
	standby := 1 - lead
	idle := workOf(t, standby)
	stopped := time.Now()
	lc.Bootstrap(lead).Stop(30 * time.Second)
	exited := time.Since(stopped)
	if got := leader(t, 10*time.Second); got != standby {
		t.Fatalf("replica %d leads; want %d", got, standby)
	}
	takeover := time.Since(stopped)
	await.For(t, 30*time.Second, "the new leader reconciling", func() bool {
		return metricOf(t, standby, "mgr_bootstrap_reconciles_total", nil) > idle.reconciles
	})
	time.Sleep(3 * time.Second) // any follow-up of that reconcile
	w := workOf(t, standby)
	t.Logf("SIGTERM: the leader exited in %s, the standby led %s after the signal; its first reconciles of the Ready mgr: %s",
		exited.Round(100*time.Millisecond), takeover.Round(100*time.Millisecond), w)
	if w.calls != idle.calls || w.apiWrites != idle.apiWrites {
		t.Errorf("the new leader's reconcile of a Ready mgr made ceph calls or API writes: %s (before: %s)", w, idle)
	}
	// Released, the lease is taken at the standby's next try (2 s retry
	// period), not after the 15 s a kill costs.
	if takeover > 10*time.Second {
		t.Errorf("the standby led %s after the leader's SIGTERM; want well within the 15s lease duration (the lease is released)", takeover)
	}
	if err := lc.StartBootstrap(ctx, lead); err != nil {
		t.Fatal(err)
	}
}

// TestAPIServerRestart: kube-apiserver restarted under running components;
// none of them restarts, the leader keeps leading, and afterwards the
// webhook completes mgrs (its informers see a Ceph namespace made after the
// restart) and the controller bootstraps them.
func TestAPIServerRestart(t *testing.T) {
	defer logsOnFailure(t)
	ctx := t.Context()
	lead := leader(t, time.Minute)
	procs := []*testenv.Process{lc.Webhook(), lc.Bootstrap(0), lc.Bootstrap(1)}
	pids := make([]int, len(procs))
	for i, p := range procs {
		pids[i] = p.Pid()
	}
	down, err := lc.API.RestartAPIServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	back := time.Now()

	// A Ceph namespace that exists only after the restart: the webhook can
	// complete its mgr only from a watch that reconnected.
	late := testenv.CephCluster{Namespace: "ceph-late", FSID: lc.Cephs[ns].FSID, MonHost: lc.Cephs[ns].MonHost, Members: "a", AdminKeyring: lc.Cephs[ns].AdminKeyring}
	if err := late.Create(ctx, lc.Client); err != nil {
		t.Fatal(err)
	}
	if err := lc.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "rook-ceph-mgr", Namespace: late.Namespace}}); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	var firstErr error
	await.For(t, 30*time.Second, "a mgr admitted in the new namespace", func() bool {
		attempts++
		err := apply(t, late.Namespace, "c")
		if firstErr == nil {
			firstErr = err
		}
		return err == nil
	})
	admitted := time.Since(back)
	await.For(t, 30*time.Second, "the keyring Secret of the new namespace's mgr", func() bool {
		return keyringOf(t, late.Namespace, "c") != ""
	})
	keyed := time.Since(back)
	if err := apply(t, ns, "b"); err != nil {
		t.Fatal(err)
	}
	await.For(t, 2*time.Minute, "mgr b Ready", func() bool { return statusOf(t, ns, "b").Phase == mgrstatus.PhaseReady })
	ready := time.Since(back)
	t.Logf("kube-apiserver down %s; after it answered: a mgr in a new namespace admitted after %s (%d attempts), its keyring after %s; mgr b Ready after %s",
		down.Round(100*time.Millisecond), admitted.Round(100*time.Millisecond), attempts, keyed.Round(100*time.Millisecond), ready.Round(100*time.Millisecond))
	for i, p := range procs {
		if p.Exited() || p.Pid() != pids[i] {
			t.Errorf("%s restarted or exited across the API server's restart", p.Name)
		}
	}
	if got := leader(t, 10*time.Second); got != lead {
		t.Errorf("replica %d leads after the restart; want %d still (the outage was shorter than the renew deadline)", got, lead)
	}
	if attempts > 1 {
		t.Logf("the first attempt failed: %v", firstErr)
	}
}

func missing(want, have []string) []string {
	var m []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			m = append(m, w)
		}
	}
	return m
}

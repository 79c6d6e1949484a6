// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Command loadgen sends AdmissionReview requests over TLS with keep-alive to
// the real mgr-webhook binary and, in the same run, to a no-op
// controller-runtime webhook (the floor), at several concurrencies, and
// prints throughput, latency percentiles, errors, the server's peak RSS and
// the ratio to the floor. mgr-webhook reads its cluster objects from a real
// kube-apiserver (KUBEBUILDER_ASSETS).
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/certs"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

func main() {
	var (
		levels   = flag.String("concurrency", "1,8,32,128", "concurrency levels")
		duration = flag.Duration("duration", 5*time.Second, "load per level and scenario")
		binDir   = flag.String("bin-dir", "bin", "directory with mgr-webhook and noop-webhook")
	)
	flag.Parse()
	if err := run(*levels, *duration, *binDir); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

type server struct {
	name string
	port int
	proc *testenv.Process
}

func run(levelsFlag string, duration time.Duration, binDir string) error {
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	api, err := testenv.StartAPIServer()
	if err != nil {
		return err
	}
	defer api.Stop()
	cl := api.Client
	info := mutate.ClusterInfo{Namespace: "rook-ceph", FSID: "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b"}
	if err := (testenv.CephCluster{Namespace: info.Namespace, FSID: info.FSID, MonHost: "v2:10.0.0.1:3300", Members: "a", AdminKeyring: "x"}).Create(ctx, cl); err != nil {
		return err
	}

	dir, err := os.MkdirTemp("", "loadgen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	certData, _, err := certs.Plan(time.Now(), nil, certs.ServiceHosts("localhost", "bench", "127.0.0.1"), certs.DefaultLifetimes, nil)
	if err != nil {
		return err
	}
	for k, v := range certData {
		if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
			return err
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certData[certs.CACertKey])

	var servers []*server
	defer func() {
		for _, s := range servers {
			s.proc.Stop(5 * time.Second)
		}
	}()
	for _, name := range []string{"noop-webhook", "mgr-webhook"} {
		port, err := testenv.FreePort()
		if err != nil {
			return err
		}
		args := []string{"--cert-dir", dir, "--host", "127.0.0.1", "--port", strconv.Itoa(port)}
		if name == "mgr-webhook" {
			args = append(args, "--kubeconfig", api.Kubeconfig, "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
		}
		p, err := testenv.Spawn(filepath.Join(binDir, name), filepath.Join(dir, name+".log"), args...)
		if err != nil {
			return err
		}
		servers = append(servers, &server{name: name, port: port, proc: p})
	}
	bodies, err := reviews(root, info)
	if err != nil {
		return err
	}
	for _, s := range servers {
		if err := waitServing(s, pool, bodies["mutate minimal"]); err != nil {
			return err
		}
	}
	// Let the webhook settle (informer lists) before reading its idle RSS.
	time.Sleep(2 * time.Second)
	idle := map[string]int{}
	for _, s := range servers {
		idle[s.name], _ = testenv.MemoryKiB(s.proc.Pid(), "VmRSS")
	}

	var levels []int
	for _, l := range strings.Split(levelsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(l))
		if err != nil {
			return err
		}
		levels = append(levels, n)
	}
	var failures []string
	fmt.Printf("| scenario | c | server | req/s | mean ms | p50 ms | p90 ms | p99 ms | errors | mean vs floor | peak RSS MiB |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, scenario := range []string{"mutate minimal", "mutate complete", "validate complete"} {
		path := "/mutate-apps-v1-deployment"
		if strings.HasPrefix(scenario, "validate") {
			path = "/validate-apps-v1-deployment"
		}
		for _, c := range levels {
			var floor float64
			for _, s := range servers {
				// The peak resident size during this level alone: reset the
				// kernel's high-water mark (clear_refs 5) before it.
				if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.proc.Pid()), []byte("5"), 0); err != nil {
					return fmt.Errorf("resetting the peak RSS of %s: %w", s.name, err)
				}
				r := load(s, pool, path, bodies[scenario], c, duration, scenario)
				peak, err := testenv.MemoryKiB(s.proc.Pid(), "VmHWM")
				if err != nil {
					return err
				}
				ratio := "1.00 (floor)"
				if s.name == "noop-webhook" {
					floor = r.mean
				} else {
					ratio = fmt.Sprintf("%.2f", r.mean/floor)
				}
				fmt.Printf("| %s | %d | %s | %.0f | %.3f | %.3f | %.3f | %.3f | %d | %s | %.1f |\n",
					scenario, c, s.name, r.rps, r.mean, r.p[50], r.p[90], r.p[99], r.errors, ratio, float64(peak)/1024)
				if r.errors > 0 {
					failures = append(failures, fmt.Sprintf("%s, c=%d, %s: %d failed, the first: %.300s", scenario, c, s.name, r.errors, r.firstError))
				}
			}
		}
	}
	fmt.Println()
	for _, s := range servers {
		fmt.Printf("%s: idle RSS %.1f MiB before the load\n", s.name, float64(idle[s.name])/1024)
	}
	fmt.Println("\nPeak RSS is per row (the high-water mark reset before each); Go returns freed memory to the OS lazily, so a row starts from what the previous one left resident.")
	if len(failures) > 0 {
		fmt.Println("\nFailed requests (a row with failures measured them, not admissions):")
		for _, f := range failures {
			fmt.Println("- " + f)
		}
	}
	return nil
}

// reviews are the AdmissionReview bodies: the minimal example (which the
// mutator patches) and the already-complete object (which it must not).
func reviews(root string, info mutate.ClusterInfo) (map[string][]byte, error) {
	data, err := os.ReadFile(filepath.Join(root, "manifests", "examples", "minimal-mgr.yaml"))
	if err != nil {
		return nil, err
	}
	minimal := &appsv1.Deployment{}
	if err := yaml.Unmarshal(data, minimal); err != nil {
		return nil, err
	}
	res, errs := mutate.Complete(minimal, info, mutate.DefaultPolicy())
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	out := map[string][]byte{}
	for name, d := range map[string]*appsv1.Deployment{"mutate minimal": minimal, "mutate complete": res.Deployment, "validate complete": res.Deployment} {
		raw, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: "bench", Kind: metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
				Resource:  metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
				Namespace: info.Namespace, Name: d.Name, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}},
		})
		if err != nil {
			return nil, err
		}
		out[name] = body
	}
	return out, nil
}

type result struct {
	rps, mean float64
	p         map[int]float64
	errors    int64
	// firstError is the first failed request's error ("" when none failed).
	firstError string
}

func newClient(pool *x509.CertPool, c int) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxIdleConns:    c, MaxIdleConnsPerHost: c, MaxConnsPerHost: c, ForceAttemptHTTP2: false,
	}}
}

func post(hc *http.Client, url string, body []byte, scenario string) error {
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	var ar admissionv1.AdmissionReview
	if err := json.Unmarshal(b, &ar); err != nil || ar.Response == nil || !ar.Response.Allowed {
		return fmt.Errorf("not allowed: %s", b)
	}
	return nil
}

func waitServing(s *server, pool *x509.CertPool, body []byte) error {
	hc := newClient(pool, 1)
	defer hc.CloseIdleConnections()
	url := fmt.Sprintf("https://127.0.0.1:%d/mutate-apps-v1-deployment", s.port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := post(hc, url, body, "")
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || s.proc.Exited() {
			return fmt.Errorf("%s not serving: %v (log %s)", s.name, err, s.proc.Log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func load(s *server, pool *x509.CertPool, path string, body []byte, c int, d time.Duration, scenario string) result {
	hc := newClient(pool, c)
	// Each level's connections end with it: left open, they would count
	// against the webhook's per-source cap (one address here) in the next.
	defer hc.CloseIdleConnections()
	url := fmt.Sprintf("https://127.0.0.1:%d%s", s.port, path)
	// Warm the connections.
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() { defer wg.Done(); _ = post(hc, url, body, scenario) }()
	}
	wg.Wait()
	var errs atomic.Int64
	var firstError sync.Once
	var first string
	lat := make([][]time.Duration, c)
	stop := time.Now().Add(d)
	start := time.Now()
	for i := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				t0 := time.Now()
				if err := post(hc, url, body, scenario); err != nil {
					errs.Add(1)
					firstError.Do(func() { first = err.Error() })
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	var sum time.Duration
	for _, l := range all {
		sum += l
	}
	ms := func(x time.Duration) float64 { return float64(x) / float64(time.Millisecond) }
	pct := func(p int) float64 { return ms(all[min(len(all)-1, len(all)*p/100)]) }
	return result{rps: float64(len(all)) / elapsed.Seconds(), mean: ms(sum) / float64(len(all)),
		p: map[int]float64{50: pct(50), 90: pct(90), 99: pct(99)}, errors: errs.Load(), firstError: first}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package rollout restarts the real mgr-webhook binary under load, two
// replicas behind a stand-in Service: the API server's admissions must all
// succeed while replicas receive SIGTERM and are replaced one at a time.
package rollout

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// service stands in for a Service with kube-proxy: new connections go round
// robin to the replicas whose /readyz answers 200 (polled every 100 ms, as the
// endpoints follow readiness); open connections stay where they are.
type service struct {
	mu       sync.Mutex
	backends []*replica
	next     int
}

type replica struct {
	name       string
	port       int
	readyz     string
	proc       *testenv.Process
	ready      atomic.Bool
	stopPolled chan struct{}
}

func (s *service) pick() *replica {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range s.backends {
		r := s.backends[s.next%len(s.backends)]
		s.next++
		if r.ready.Load() {
			return r
		}
	}
	return nil
}

func (s *service) serve(l net.Listener) {
	for {
		in, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer in.Close()
			r := s.pick()
			if r == nil {
				return
			}
			out, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)))
			if err != nil {
				return
			}
			defer out.Close()
			go func() { _, _ = io.Copy(out, in) }()
			_, _ = io.Copy(in, out)
		}()
	}
}

func (s *service) set(rs ...*replica) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.backends = rs
}

func TestRollingRestartUnderLoad(t *testing.T) {
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	binDir := testenv.BuildForTest(t, "mgr-webhook")
	bin := filepath.Join(binDir, "mgr-webhook")
	api, err := testenv.StartWithShippedWebhooks()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Stop()
	k8s := api.Client
	if _, err := testenv.ApplyRBAC(ctx, k8s, filepath.Join(root, "manifests", "base")); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := api.KubeconfigAs(testenv.WebhookServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(kubeconfig)
	cluster := testenv.CephCluster{Namespace: "rook-ceph", FSID: "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b", MonHost: "v2:10.0.0.1:3300", Members: "a", AdminKeyring: "[client.admin]\n"}
	if err := cluster.Create(ctx, k8s); err != nil {
		t.Fatal(err)
	}

	wo := api.Env.WebhookInstallOptions
	start := func(name string) *replica {
		t.Helper()
		port, err := testenv.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		probe, err := testenv.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		// The envtest certificate, as cert-manager would mount it.
		p, err := testenv.Spawn(bin, filepath.Join(t.TempDir(), name+".log"),
			"--kubeconfig", kubeconfig, "--cert-dir", wo.LocalServingCertDir, "--host=127.0.0.1", "--port="+strconv.Itoa(port),
			"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(probe), "--shutdown-delay=3s")
		if err != nil {
			t.Fatal(err)
		}
		r := &replica{name: name, port: port, readyz: fmt.Sprintf("http://127.0.0.1:%d/readyz", probe), proc: p, stopPolled: make(chan struct{})}
		go func() {
			for {
				select {
				case <-r.stopPolled:
					return
				case <-time.After(100 * time.Millisecond):
				}
				resp, err := http.Get(r.readyz)
				ok := err == nil && resp.StatusCode == http.StatusOK
				if err == nil {
					resp.Body.Close()
				}
				r.ready.Store(ok)
			}
		}()
		t.Cleanup(func() { close(r.stopPolled); p.Stop(10 * time.Second) })
		deadline := time.Now().Add(60 * time.Second)
		for !r.ready.Load() {
			if time.Now().After(deadline) || p.Exited() {
				log, _ := os.ReadFile(p.Log)
				t.Fatalf("%s never ready:\n%s", name, log)
			}
			time.Sleep(100 * time.Millisecond)
		}
		return r
	}

	svc := &service{}
	l, err := net.Listen("tcp", net.JoinHostPort(wo.LocalServingHost, strconv.Itoa(wo.LocalServingPort)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go svc.serve(l)
	a, b := start("a"), start("b")
	svc.set(a, b)

	// Load: 4 workers create and delete mgrs through the API server.
	var ok, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("r%d-%d", w, i)
				d, err := testenv.MinimalMgrObject(root, "rook-ceph", id)
				if err != nil {
					t.Error(err)
					return
				}
				if err := k8s.Create(ctx, d); err != nil {
					failed.Add(1)
					t.Logf("admission failed: %v", err)
					continue
				}
				ok.Add(1)
				_ = k8s.Delete(ctx, d)
			}
		}()
	}

	// Each phase of the restart must carry load, however fast the machine:
	// wait for admissions to succeed in it, not for a guessed time.
	carried := func(phase string) {
		t.Helper()
		from := ok.Load()
		deadline := time.Now().Add(60 * time.Second)
		for ok.Load() < from+25 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d admissions in 60s, want 25 (failed so far: %d)", phase, ok.Load()-from, failed.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	// A rolling restart: a new replica comes up, then an old one gets
	// SIGTERM, drains and exits; twice.
	var steps []string
	for _, old := range []*replica{a, b} {
		carried("before " + old.name + "'s replacement")
		fresh := start(old.name + "2")
		svc.set(append(svc.backends, fresh)...)
		began := time.Now()
		if err := syscall.Kill(old.proc.Pid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		for !old.proc.Exited() {
			if time.Since(began) > 30*time.Second {
				t.Fatalf("%s did not exit within 30s of SIGTERM", old.name)
			}
			time.Sleep(50 * time.Millisecond)
		}
		steps = append(steps, fmt.Sprintf("%s exited %s after SIGTERM", old.name, time.Since(began).Round(100*time.Millisecond)))
		var rest []*replica
		for _, r := range svc.backends {
			if r != old {
				rest = append(rest, r)
			}
		}
		svc.set(rest...)
	}
	carried("after the restart")
	close(stop)
	wg.Wait()
	t.Logf("rolling restart of 2 replicas under load: %d admissions, %d failed; %v", ok.Load(), failed.Load(), steps)
	if failed.Load() != 0 || ok.Load() < 100 {
		t.Errorf("%d of %d admissions failed during the rolling restart; want 0 of at least 100", failed.Load(), ok.Load()+failed.Load())
	}
}

var _ client.Object = &appsv1.Deployment{}

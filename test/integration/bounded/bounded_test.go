// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package bounded attacks the webhook the way anyone who can reach its port
// can: large, slow and many requests, while the API server goes on calling it.
package bounded

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/webhook"
)

// TestWebhookBoundedAgainstItsCallers: the mgr-webhook binary, as its
// ServiceAccount and with the shipped Deployment's memory settings, serves a
// real API server while 20 clients on loopback keep sending slow 3 MiB
// bodies, 200 more keep connections open that send a small request's
// headers and no body, and 2000 more from 10 addresses open TCP connections
// past every connection cap (each reconnecting when cut). A body declared over
// 3 MiB is refused before it is read; a mgr apply through the API server
// still succeeds within its timeout; the process's peak memory stays under
// the Deployment's limit.
func TestWebhookBoundedAgainstItsCallers(t *testing.T) {
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	limit, gomemlimit := shippedMemory(t, root)
	binDir := testenv.BuildForTest(t, "mgr-webhook")
	api, err := testenv.StartWithShippedWebhooks()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Stop)
	cc := testenv.CephCluster{Namespace: "rook-ceph", FSID: "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b", MonHost: "[v2:10.0.0.1:3300]", Members: "a",
		AdminKeyring: "[client.admin]\n\tkey = not-a-real-key\n"}
	if err := cc.Create(ctx, api.Client); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOMEMLIMIT", gomemlimit)
	p := testenv.SpawnWebhook(t, api, binDir)
	wo := api.Env.WebhookInstallOptions
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(wo.LocalServingPort))
	// Callers dial from loopback addresses of their own, as pods come from
	// theirs; the API server calls from 127.0.0.1.
	dialFrom := func(source string) (*tls.Conn, error) {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 5 * time.Second}
		return tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the attacker does not care whom it talks to
	}
	dial := func() (*tls.Conn, error) { return dialFrom("127.0.0.2") }

	t.Run("a body declared over 3 MiB is refused unread", func(t *testing.T) {
		conn, err := dial()
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", webhook.ValidatePath, webhook.MaxRequestBytes+1)
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("answer %v, %v; want 413 before any byte of the body", resp, err)
		}
	})

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent, refused atomic.Int64
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = 'x'
	}
	// attack runs n callers, spread over 4 addresses (127.0.0.2-5, within
	// the per-source cap), each dialling again whenever each returns, until
	// stop is closed.
	attack := func(n int, each func(conn *tls.Conn)) {
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					conn, err := dialFrom("127.0.0." + strconv.Itoa(2+i%4))
					if err != nil {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					each(conn)
					conn.Close()
				}
			}()
		}
	}
	// 20 attackers, each sending 3 MiB bodies at 640 KiB/s, again and again.
	attack(20, func(conn *tls.Conn) {
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"request\":{\"object\":\"", webhook.ValidatePath, webhook.MaxRequestBytes)
		for n := 0; n < webhook.MaxRequestBytes-len(chunk); n += len(chunk) {
			if _, err := conn.Write(chunk); err != nil {
				refused.Add(1)
				return
			}
			sent.Add(int64(len(chunk)))
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	// 200 idle callers: a small review's headers, then nothing.
	var idle atomic.Int64
	attack(200, func(conn *tls.Conn) {
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n", webhook.MutatePath)
		idle.Add(1)
		done := make(chan struct{})
		go func() { _, _ = conn.Read(make([]byte, 1)); close(done) }() // until the webhook cuts it
		select {
		case <-stop:
		case <-done:
		}
	})
	// And a flood past every cap: 10 addresses (127.0.0.10-19), 200 TCP
	// connections each that never start TLS, redialled when cut. The
	// listener holds at most 128 per address and 1024 in all; a connection
	// it refuses is closed at once. One it lets in is closed at the header
	// timeout, unless evicted: a connection closed in under half of that is
	// counted as cut by the caps.
	var flooding, cutAtOnce atomic.Int64
	for src := 10; src < 20; src++ {
		for range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0." + strconv.Itoa(src))}, Timeout: 5 * time.Second}
				for {
					select {
					case <-stop:
						return
					default:
					}
					conn, err := d.Dial("tcp", addr)
					if err != nil {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					flooding.Add(1)
					opened := time.Now()
					done := make(chan struct{})
					go func() { _, _ = conn.Read(make([]byte, 1)); close(done) }()
					select {
					case <-stop:
					case <-done:
						if time.Since(opened) < webhook.ReadHeaderTimeout/2 {
							cutAtOnce.Add(1)
							time.Sleep(100 * time.Millisecond)
						}
					}
					conn.Close()
				}
			}()
		}
	}
	// The attack in full swing: every large slot's worth of bodies sent.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return sent.Load() >= 4*int64(webhook.MaxRequestBytes) && idle.Load() >= 200 && cutAtOnce.Load() >= 1000, nil
	}); err != nil {
		t.Fatalf("the attackers sent only %d bytes, with %d idle connections; %d flood connections cut at once", sent.Load(), idle.Load(), cutAtOnce.Load())
	}

	mgr := &appsv1.Deployment{}
	data, err := os.ReadFile(filepath.Join(root, "manifests", "examples", "minimal-mgr.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, mgr); err != nil {
		t.Fatal(err)
	}
	applyCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	start := time.Now()
	err = api.Client.Create(applyCtx, mgr)
	cancel()
	took := time.Since(start)
	if err != nil {
		t.Errorf("a mgr create through the API server under attack: %v (after %s)", err, took)
	} else {
		got := &appsv1.Deployment{}
		if err := api.Client.Get(ctx, client.ObjectKeyFromObject(mgr), got); err != nil || len(got.Spec.Template.Spec.InitContainers) == 0 {
			t.Errorf("the mgr was stored without completion: %v", err)
		}
	}
	close(stop)
	wg.Wait()
	hwm, err := testenv.MemoryKiB(p.Pid(), "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("under 20 slow 3 MiB senders (%d MiB sent, %d connections cut), 200 idle callers (%d connections) and a flood of 2000 (%d connections, %d cut at once): mgr create took %s; webhook peak RSS %d MiB (limit %d MiB, GOMEMLIMIT %s)",
		sent.Load()>>20, refused.Load(), idle.Load(), flooding.Load(), cutAtOnce.Load(), took.Round(time.Millisecond), hwm>>10, limit>>20, gomemlimit)
	if int64(hwm)<<10 >= limit {
		t.Errorf("peak RSS %d KiB reached the Deployment's memory limit (%d bytes)", hwm, limit)
	}
}

// shippedMemory reads the webhook Deployment's memory limit (bytes) and its
// GOMEMLIMIT from manifests/base.
func shippedMemory(t *testing.T, root string) (int64, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "manifests", "base", "webhook", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := yaml.Unmarshal(data, d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	q, ok := c.Resources.Limits["memory"]
	if !ok {
		t.Fatal("the webhook Deployment has no memory limit")
	}
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" {
			return q.Value(), strings.TrimSpace(e.Value)
		}
	}
	t.Fatal("the webhook Deployment sets no GOMEMLIMIT")
	return 0, ""
}

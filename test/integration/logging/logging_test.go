// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package logging checks that each binary logs one format: client-go's and
// leader election's klog output goes through the same zap logger, as JSON.
package logging

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// TestOneLogFormat runs both binaries as an identity the API server
// forbids everything, so that client-go's reflectors (which log through
// klog) complain; every line of their output must be JSON, and some must
// come from klog.
func TestOneLogFormat(t *testing.T) {
	dir := testenv.BuildForTest(t, "mgr-webhook", "mgr-bootstrap")
	// A real API server, and an identity without RBAC: discovery works, every
	// list and watch is forbidden, and client-go's reflectors say so.
	api, err := testenv.StartAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Stop()
	kubeconfig, err := api.KubeconfigAs(testenv.ServiceAccountUser("nowhere", "nobody"))
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(kubeconfig)
	webhookPort, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"mgr-webhook":   {"--cert-dir=" + api.Env.WebhookInstallOptions.LocalServingCertDir, "--host=127.0.0.1", "--port=" + strconv.Itoa(webhookPort)},
		"mgr-bootstrap": {"--leader-elect=false"},
	} {
		t.Run(name, func(t *testing.T) {
			log := filepath.Join(dir, name+".log")
			p, err := testenv.Spawn(filepath.Join(dir, name), log,
				append([]string{"--kubeconfig", kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0"}, args...)...)
			if err != nil {
				t.Fatal(err)
			}
			// Stop once the binary has complained about a forbidden list (the
			// webhook's from a client-go reflector, through klog), not after a
			// guessed time.
			want := "forbidden"
			if name == "mgr-webhook" {
				want = `"logger":"klog"`
			}
			deadline := time.Now().Add(time.Minute)
			for {
				data, _ := os.ReadFile(log)
				if strings.Contains(string(data), want) {
					break
				}
				if time.Now().After(deadline) || p.Exited() {
					t.Errorf("%s logged no line with %s within a minute (exited: %v)", name, want, p.Exited())
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			p.Stop(5 * time.Second)
			f, err := os.Open(log)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			lines, fromKlog := 0, 0
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				lines++
				var l map[string]any
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					t.Errorf("not a JSON line: %s", sc.Text())
					continue
				}
				// klog's own "logger" key follows ours: match the text.
				if strings.Contains(sc.Text(), `"logger":"klog"`) {
					fromKlog++
				}
			}
			t.Logf("%d lines, %d from klog", lines, fromKlog)
			// The webhook's cluster cache runs plain client-go informers, whose
			// reflectors report through klog (controller-runtime's cache, the
			// controller's, routes them itself).
			if name == "mgr-webhook" && fromKlog == 0 {
				t.Errorf("no klog line among %d: client-go's complaints about the forbidden lists did not come through the logger", lines)
			}
		})
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package kind tests, without Docker, what hack/e2e-kind.sh builds its
// throwaway Ceph clusters from: mon.sh runs a real ceph-mon here, and the
// script's Ceph namespace, created on a real API server, is one the shipped
// webhook admits a minimal mgr into.
package kind

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

// TestMonScript runs test/ceph/kind/mon.sh with the host's Ceph, as the pod runs it
// with the image's: the mon forms a quorum, client.admin from the keyring it
// was given is let in and can create a mgr's key (the controller's first call).
func TestMonScript(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{"ceph-mon", "ceph-authtool", "monmaptool", "ceph"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not found: install Ceph with hack/install-deps.sh", bin)
		}
	}
	dir := t.TempDir()
	admin := filepath.Join(dir, "admin.keyring")
	if out, err := exec.Command("ceph-authtool", "--create-keyring", admin, "--gen-key", "-n", "client.admin",
		"--cap", "mon", "allow *", "--cap", "mgr", "allow *", "--cap", "osd", "allow *", "--cap", "mds", "allow *").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	v2, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	v1, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	fsid := uuid.NewString()
	logf, err := os.Create(filepath.Join(dir, "mon.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	mon := exec.Command("sh", filepath.Join(root, "test", "ceph", "kind", "mon.sh"))
	mon.Env = append(os.Environ(), "FSID="+fsid, "ADMIN_KEYRING="+admin, "PUBLIC_ADDR=127.0.0.1", "DATA="+filepath.Join(dir, "mon"),
		fmt.Sprintf("PORT_V2=%d", v2), fmt.Sprintf("PORT_V1=%d", v1))
	mon.Stdout, mon.Stderr = logf, logf
	mon.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-mon.Process.Pid, syscall.SIGKILL)
		_ = mon.Wait()
	}()
	conf := filepath.Join(dir, "client.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, "[global]\nmon_host = [v2:127.0.0.1:%d]\n", v2), 0o600); err != nil {
		t.Fatal(err)
	}
	ceph := func(args ...string) (string, error) {
		out, err := exec.Command("ceph", append([]string{"-c", conf, "--keyring", admin, "--connect-timeout", "5", "--format", "json"}, args...)...).CombinedOutput()
		return string(out), err
	}
	var status string
	err = wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		status, err = ceph("quorum_status")
		return err == nil, nil
	})
	if err != nil {
		log, _ := os.ReadFile(logf.Name())
		t.Fatalf("no quorum from mon.sh: %s\nlast answer: %s\nmon log (tail): %s", err, status, tail(string(log), 2000))
	}
	if !strings.Contains(status, `"quorum_names":["a"]`) || !strings.Contains(status, fsid) {
		t.Errorf("quorum_status %s: want mon a of cluster %s", status, fsid)
	}
	if out, err := ceph("auth", "get-or-create-key", "mgr.a", "mon", "allow profile mgr"); err != nil || !strings.Contains(out, "AQ") {
		t.Errorf("client.admin cannot create a mgr key: %v %s", err, out)
	}
}

// TestCephNamespace runs `hack/e2e-remote.sh ceph <ns>` (each Ceph namespace
// of make e2e-kind and make e2e-node) against a real API
// server with the shipped webhooks: the namespace holds Rook's objects, the
// mon's address is its Service's, and a minimal mgr there is admitted and
// completed with the cluster's fsid.
func TestCephNamespace(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	api, err := testenv.StartAPIServerWith(testenv.APIServerOptions{ShippedWebhooks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Stop()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	clusters, err := testenv.ServeWebhooks(ctx, api, mutate.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "ceph-kind"
	script := func() string {
		t.Helper()
		cmd := exec.Command(filepath.Join(root, "hack", "e2e-remote.sh"), "ceph", ns)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+api.Kubeconfig, "PATH="+filepath.Dir(api.Kubectl)+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("hack/e2e-remote.sh ceph %s: %v\n%s", ns, err, out)
		}
		return string(out)
	}
	script()
	// A rerun on the same cluster keeps it as it is.
	if out := script(); !strings.Contains(out, "already a Ceph cluster") {
		t.Errorf("second hack/e2e-remote.sh ceph %s: %s", ns, out)
	}

	svc, mon, cfg, kr := &corev1.Service{}, &corev1.Secret{}, &corev1.Secret{}, &corev1.Secret{}
	for name, obj := range map[string]client.Object{"rook-ceph-mon-a": svc, "rook-ceph-mon": mon, "rook-ceph-config": cfg, "rook-ceph-admin-keyring": kr} {
		if err := api.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			t.Fatal(err)
		}
	}
	ip := svc.Spec.ClusterIP
	if want := fmt.Sprintf("[v2:%s:3300,v1:%s:6789]", ip, ip); string(cfg.Data["mon_host"]) != want {
		t.Errorf("mon_host %q, want the Service's %s", cfg.Data["mon_host"], want)
	}
	keyring := filepath.Join(t.TempDir(), "keyring")
	if err := os.WriteFile(keyring, kr.Data["keyring"], 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ceph-authtool", "-l", keyring).CombinedOutput(); err != nil || !strings.Contains(string(out), "[client.admin]") {
		t.Errorf("rook-ceph-admin-keyring is not a keyring ceph-authtool reads: %v", err) // never print the key
	}

	fsid := string(mon.Data["fsid"])
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		info, err := clusters.Lookup(ns)
		return err == nil && info.FSID == fsid, nil
	}); err != nil {
		t.Fatalf("the webhook does not see namespace %s as Ceph cluster %s", ns, fsid)
	}
	manifest, err := testenv.MinimalMgr(root, ns, "a", [2]int32{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	apply := exec.Command(api.Kubectl, "--kubeconfig", api.Kubeconfig, "apply", "--dry-run=server", "-o", "yaml", "-f", "-")
	apply.Stdin = strings.NewReader(string(manifest))
	out, err := apply.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--fsid="+fsid) {
		t.Errorf("minimal mgr in %s: %v, want it completed with --fsid=%s:\n%s", ns, err, fsid, tail(string(out), 1500))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Process is a child process that logs to a file and dies with its parent.
type Process struct {
	Name string
	Log  string
	cmd  *exec.Cmd
	done chan struct{}
}

// Spawn starts bin with args, stdout and stderr to logPath.
func Spawn(bin, logPath string, args ...string) (*Process, error) {
	if _, err := os.Stat(bin); err != nil {
		if _, lerr := exec.LookPath(bin); lerr != nil {
			return nil, fmt.Errorf("%s not found: build it first (make build / make binaries)", bin)
		}
	}
	// Appended to: a component started again keeps its earlier log.
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so Stop reaches its children too; SIGKILL if we die.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p := &Process{Name: bin, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(p.done) }()
	return p, nil
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Pid of the process.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *Process) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Kill sends SIGKILL to the process group, as the OOM killer or a node
// failure would, and waits for the process to end.
func (p *Process) Kill() {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// FreePort returns a TCP port free on 127.0.0.1 at the time of the call,
// chosen at random below the kernel's ephemeral port range. The port is for
// another process to listen on later; one from the ephemeral range (what
// Listen(":0") hands out) may meanwhile become the source port of any
// outgoing connection (a cold make test failed so: "Port 41983 not free" for
// a mgr's dashboard). Random, so parallel test processes rarely pick alike.
func FreePort() (int, error) {
	lo, hi := portsBelowEphemeral()
	for range 200 {
		port := lo + rand.IntN(hi-lo)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free TCP port in [%d, %d) after 200 tries", lo, hi)
}

// portsBelowEphemeral is the range FreePort picks from: [10000, the first
// ephemeral port), or [10000, 32768) when the kernel does not say.
func portsBelowEphemeral() (lo, hi int) {
	lo, hi = 10000, 32768
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	if f := strings.Fields(string(data)); len(f) == 2 {
		if first, err := strconv.Atoi(f[0]); err == nil && first > lo+1000 {
			hi = first
		}
	}
	return lo, hi
}

// MemoryKiB reads a memory field of /proc/<pid>/status in KiB: "VmRSS" is
// the resident size now, "VmHWM" its peak.
func MemoryKiB(pid int, field string) (int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("%s not in /proc/%d/status", field, pid)
}

// BuildCommands builds the binaries of cmd/<name>... of the repository at
// root into dir, as `make build` does, for tests that run what ships.
func BuildCommands(ctx context.Context, root, dir string, names ...string) error {
	args := []string{"build", "-o", dir + "/"}
	for _, n := range names {
		args = append(args, "./cmd/"+n)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %v: %v\n%s", names, err, out)
	}
	return nil
}

// SpawnReady starts bin as Spawn does, with its health probe on
// 127.0.0.1:probe (--health-probe-bind-address, appended), and returns once
// /readyz answers 200. An exit or the timeout is an error naming the log, and
// stops the process.
func SpawnReady(ctx context.Context, bin, logPath string, probe int, timeout time.Duration, args ...string) (*Process, error) {
	args = append(args, "--health-probe-bind-address="+net.JoinHostPort("127.0.0.1", strconv.Itoa(probe)))
	p, err := Spawn(bin, logPath, args...)
	if err != nil {
		return nil, err
	}
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", probe)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("%s exited", filepath.Base(bin))
		}
		resp, err := http.Get(readyz)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		p.Stop(5 * time.Second)
		return nil, fmt.Errorf("%s not ready: %w (log: %s)", filepath.Base(bin), err, logPath)
	}
	return p, nil
}

// StopAtCleanup stops p when t ends and, if t failed, logs what p wrote.
func (p *Process) StopAtCleanup(t testing.TB, grace time.Duration) {
	t.Cleanup(func() {
		p.Stop(grace)
		if t.Failed() {
			log, _ := os.ReadFile(p.Log)
			t.Logf("%s log:\n%s", filepath.Base(p.Name), log)
		}
	})
}

// BuildForTest builds the named commands (cmd/<name>) into a directory of
// t's, which it returns; a build failure fails t.
func BuildForTest(t testing.TB, names ...string) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := BuildCommands(t.Context(), root, dir, names...); err != nil {
		t.Fatal(err)
	}
	return dir
}

// ControllerCeph is the ceph CLI the controller under test runs:
// $MGR_WEBHOOK_CONTROLLER_CEPH, else the ceph in PATH (the release of the test
// clusters). make test sets it to run one release's CLI against another's
// daemons.
func ControllerCeph() string {
	if v := os.Getenv("MGR_WEBHOOK_CONTROLLER_CEPH"); v != "" {
		return v
	}
	return "ceph"
}

// SpawnWebhook runs the mgr-webhook binary (built into binDir) as the
// shipped install runs it: as its ServiceAccount with manifests/base's RBAC,
// serving a on the address and certificates its shipped webhooks call, with
// extra flags args. It returns once /readyz answers and stops it at t's
// cleanup; a failure fails t.
func SpawnWebhook(t testing.TB, a *APIServer, binDir string, args ...string) *Process {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyRBAC(t.Context(), a.Client, filepath.Join(root, "manifests", "base")); err != nil {
		t.Fatal(err)
	}
	kc, err := a.KubeconfigAs(WebhookServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(kc) })
	probe, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	wo := a.Env.WebhookInstallOptions
	args = append([]string{"--kubeconfig", kc, "--cert-dir=" + wo.LocalServingCertDir, "--host=127.0.0.1", "--port=" + strconv.Itoa(wo.LocalServingPort), "--metrics-bind-address=0"}, args...)
	p, err := SpawnReady(context.Background(), filepath.Join(binDir, "mgr-webhook"), filepath.Join(t.TempDir(), "mgr-webhook.log"), probe, time.Minute, args...)
	if err != nil {
		t.Fatal(err)
	}
	p.StopAtCleanup(t, 5*time.Second)
	return p
}

// Main is a suite's TestMain: run sets the suite up, runs m and tears down;
// an error of its own fails the suite, named, with exit code 1.
func Main(m *testing.M, suite string, run func(*testing.M) (int, error)) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, suite+":", err)
		code = 1
	}
	os.Exit(code)
}

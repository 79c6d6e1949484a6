// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package cephtest runs a throwaway Ceph cluster for tests and the demo: one
// mon and one mgr on 127.0.0.1, no OSDs, everything under a temp dir, the
// daemons in the foreground as child processes stopped by PID.
package cephtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// Cluster is a running mon + mgr.
type Cluster struct {
	FSID    string
	MonHost string   // e.g. v2:127.0.0.1:40123
	MgrID   string   // the active mgr
	MgrIDs  []string // every mgr daemon
	Dir     string
	Conf    string // ceph.conf path (client.admin keyring under [client])
	// AdminKeyring is the client.admin keyring file content.
	AdminKeyring string
	// PrometheusPort and DashboardPort are the first mgr's module ports;
	// MgrPorts holds every mgr's [prometheus, dashboard] ports. They are
	// unique per daemon so that several mgrs and clusters share the host (in
	// Kubernetes each mgr pod has its own IP instead).
	PrometheusPort, DashboardPort int
	MgrPorts                      map[string][2]int
	procs                         []*exec.Cmd
	done                          []chan struct{}
}

// Options for Start.
type Options struct {
	// MgrIDs of the mgr daemons (the first becomes active); ["a"] when empty.
	MgrIDs []string
	// MgrCaps of the mgr's key; the mgr profile when empty.
	MgrCaps []string
}

// Installed reports whether the Ceph daemons are on this machine.
func Installed() error {
	for _, bin := range []string{"ceph-mon", "ceph-mgr", "ceph", "ceph-authtool", "monmaptool"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s not found: install Ceph with hack/install-deps.sh (Debian ceph-mon ceph-mgr ceph-common)", bin)
		}
	}
	return nil
}

// Start creates and starts a cluster. Call Stop when done.
func Start(ctx context.Context, o Options) (c *Cluster, err error) {
	if err := Installed(); err != nil {
		return nil, err
	}
	if len(o.MgrIDs) == 0 {
		o.MgrIDs = []string{"a"}
	}
	if o.MgrCaps == nil {
		o.MgrCaps = contract.DefaultCaps
	}
	// Short path: admin socket paths must stay under 107 bytes.
	dir, err := os.MkdirTemp("", "ceph")
	if err != nil {
		return nil, err
	}
	c = &Cluster{FSID: uuid.NewString(), MgrID: o.MgrIDs[0], MgrIDs: o.MgrIDs, Dir: dir, Conf: filepath.Join(dir, "ceph.conf")}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	ports, err := freePorts(1 + 2*len(o.MgrIDs))
	if err != nil {
		return c, err
	}
	c.MonHost = fmt.Sprintf("v2:127.0.0.1:%d", ports[0])
	c.MgrPorts = map[string][2]int{}
	for i, id := range o.MgrIDs {
		c.MgrPorts[id] = [2]int{ports[1+2*i], ports[2+2*i]}
	}
	c.PrometheusPort, c.DashboardPort = c.MgrPorts[o.MgrIDs[0]][0], c.MgrPorts[o.MgrIDs[0]][1]
	for _, sub := range []string{"run", "log", "mon"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return c, err
		}
	}
	if err := os.WriteFile(c.Conf, []byte(c.conf()), 0o600); err != nil {
		return c, err
	}
	monKeyring, adminKeyring := filepath.Join(dir, "mon.keyring"), filepath.Join(dir, "admin.keyring")
	steps := [][]string{
		{"ceph-authtool", "--create-keyring", monKeyring, "--gen-key", "-n", "mon.", "--cap", "mon", "allow *"},
		{"ceph-authtool", "--create-keyring", adminKeyring, "--gen-key", "-n", "client.admin",
			"--cap", "mon", "allow *", "--cap", "osd", "allow *", "--cap", "mds", "allow *", "--cap", "mgr", "allow *"},
		{"ceph-authtool", monKeyring, "--import-keyring", adminKeyring},
		{"monmaptool", "--create", "--addv", "a", "[" + c.MonHost + "]", "--fsid", c.FSID, filepath.Join(dir, "monmap")},
		{"ceph-mon", "-c", c.Conf, "--mkfs", "-i", "a", "--monmap", filepath.Join(dir, "monmap"), "--keyring", monKeyring},
	}
	for _, s := range steps {
		if out, err := exec.CommandContext(ctx, s[0], s[1:]...).CombinedOutput(); err != nil {
			return c, fmt.Errorf("%s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	kr, err := os.ReadFile(adminKeyring)
	if err != nil {
		return c, err
	}
	c.AdminKeyring = string(kr)
	if err := c.daemon("ceph-mon", "ceph-mon", "-c", c.Conf, "-i", "a", "-f"); err != nil {
		return c, err
	}
	setup := [][]string{
		// Per-cluster module ports and loopback addresses, so clusters share the host.
		{"config", "set", "mgr", "mgr/prometheus/server_addr", "127.0.0.1", "--force"},
		{"config", "set", "mgr", "mgr/prometheus/server_port", strconv.Itoa(c.PrometheusPort), "--force"},
		{"config", "set", "mgr", "mgr/dashboard/server_addr", "127.0.0.1", "--force"},
		{"config", "set", "mgr", "mgr/dashboard/ssl_server_port", strconv.Itoa(c.DashboardPort), "--force"},
	}
	for _, id := range o.MgrIDs {
		if err := os.MkdirAll(filepath.Join(dir, "mgr", "ceph-"+id), 0o700); err != nil {
			return c, err
		}
		keyring := filepath.Join(dir, "mgr", "ceph-"+id, "keyring")
		setup = append(setup, append([]string{"auth", "get-or-create", "mgr." + id}, append(o.MgrCaps, "-o", keyring, "--format", "plain")...),
			[]string{"config", "set", "mgr." + id, "mgr/prometheus/server_port", strconv.Itoa(c.MgrPorts[id][0]), "--force"},
			[]string{"config", "set", "mgr." + id, "mgr/dashboard/ssl_server_port", strconv.Itoa(c.MgrPorts[id][1]), "--force"})
	}
	for _, s := range setup {
		if err := c.setup(ctx, s...); err != nil {
			return c, err
		}
	}
	for i, id := range o.MgrIDs {
		if err := c.daemon(fmt.Sprintf("ceph-mgr.%d", i), "ceph-mgr", "-c", c.Conf, "-i", id, "-f"); err != nil {
			return c, err
		}
		if i == 0 {
			// The first becomes active; the others stand by. A loaded machine
			// (a Tentacle mgr loads dozens of Python modules) can take minutes:
			// the wait ends early only when a daemon exits, and the bound is a
			// guard against a hang, not a guess at the machine's speed.
			if err := c.WaitMgrAvailable(ctx, 5*time.Minute); err != nil {
				return c, err
			}
		}
	}
	return c, nil
}

func (c *Cluster) conf() string {
	return fmt.Sprintf(`[global]
fsid = %[1]s
mon_host = %[2]s
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
auth_allow_insecure_global_id_reclaim = false
mon_warn_on_insecure_global_id_reclaim_allowed = false
mon_data_avail_warn = 1
mon_warn_on_too_few_osds = false
ms_bind_msgr1 = false
[client]
keyring = %[3]s/admin.keyring
[mon]
mon_data = %[3]s/mon/$cluster-$id
admin_socket = %[3]s/run/$name.asok
log_file = %[3]s/log/$name.log
[mgr]
mgr_data = %[3]s/mgr/$cluster-$id
admin_socket = %[3]s/run/$name.asok
log_file = %[3]s/log/$name.log
`, c.FSID, c.MonHost, c.Dir)
}

func (c *Cluster) daemon(name, bin string, args ...string) error {
	logf, err := os.Create(filepath.Join(c.Dir, "log", name+".out"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	c.procs, c.done = append(c.procs, cmd), append(c.done, done)
	return nil
}

// Ceph runs the ceph CLI as client.admin with a deadline and returns stdout.
func (c *Cluster) Ceph(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ceph", append([]string{"-c", c.Conf, "--connect-timeout=15", "--format", "json"}, args...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ceph %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out.Bytes(), nil
}

// exited names a daemon of the cluster that has exited ("" while all run).
func (c *Cluster) exited() string {
	for i, done := range c.done {
		select {
		case <-done:
			return strings.Join(c.procs[i].Args, " ")
		default:
		}
	}
	return ""
}

// setup runs one setup command until it succeeds. Right after the mon
// starts, on a loaded machine, one CLI call (a Python start and a first
// connection) can outlast Ceph's per-call deadline, so the command (each is
// idempotent) is tried again while the daemons run. It fails at once when a
// daemon exits; the bound guards against a hang, not a guess at the
// machine's speed.
func (c *Cluster) setup(ctx context.Context, args ...string) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		if name := c.exited(); name != "" {
			return false, fmt.Errorf("%s exited during setup (ceph %s); logs in %s", name, strings.Join(args, " "), filepath.Join(c.Dir, "log"))
		}
		_, last = c.Ceph(ctx, args...)
		return last == nil, nil
	})
	if err != nil && last != nil && wait.Interrupted(err) {
		return last
	}
	return err
}

// WaitMgrAvailable waits until `ceph mgr stat` reports an available mgr,
// and fails at once when one of the cluster's daemons has exited.
func (c *Cluster) WaitMgrAvailable(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if name := c.exited(); name != "" {
			return fmt.Errorf("%s exited while waiting for mgr.%s to be available; logs in %s", name, c.MgrID, filepath.Join(c.Dir, "log"))
		}
		out, err := c.Ceph(ctx, "mgr", "stat")
		var st struct {
			Available  bool   `json:"available"`
			ActiveName string `json:"active_name"`
		}
		if err == nil && json.Unmarshal(out, &st) == nil && st.Available && st.ActiveName == c.MgrID {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mgr.%s not available after %s (last: %v %s); logs in %s", c.MgrID, timeout, err, out, filepath.Join(c.Dir, "log"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// EnabledModules returns `ceph mgr module ls`'s enabled modules.
func (c *Cluster) EnabledModules(ctx context.Context) ([]string, error) {
	out, err := c.Ceph(ctx, "mgr", "module", "ls")
	if err != nil {
		return nil, err
	}
	var ls struct {
		Enabled []string `json:"enabled_modules"`
	}
	return ls.Enabled, json.Unmarshal(out, &ls)
}

// GetKey returns `ceph auth get-key <entity>`.
func (c *Cluster) GetKey(ctx context.Context, entity string) (string, error) {
	out, err := c.Ceph(ctx, "auth", "get-key", entity)
	if err != nil {
		return "", err
	}
	var k struct {
		Key string `json:"key"`
	}
	return k.Key, json.Unmarshal(out, &k)
}

// StopMon stops the mon: the cluster is unreachable until StartMon.
func (c *Cluster) StopMon() { c.stop(0) }

// StartMon starts the mon again on its store and address; the mgrs reconnect.
func (c *Cluster) StartMon() error {
	if err := c.daemon("ceph-mon", "ceph-mon", "-c", c.Conf, "-i", "a", "-f"); err != nil {
		return err
	}
	last := len(c.procs) - 1
	c.procs[0], c.done[0] = c.procs[last], c.done[last]
	c.procs, c.done = c.procs[:last], c.done[:last]
	return nil
}

// stop ends daemon i (TERM, then KILL after 10 s); a stopped one is a no-op.
func (c *Cluster) stop(i int) {
	select {
	case <-c.done[i]:
		return
	default:
	}
	_ = syscall.Kill(-c.procs[i].Process.Pid, syscall.SIGTERM)
	select {
	case <-c.done[i]:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-c.procs[i].Process.Pid, syscall.SIGKILL)
		<-c.done[i]
	}
}

// Stop kills the daemons by PID and removes the cluster's files.
func (c *Cluster) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.stop(i)
	}
	if os.Getenv("CEPHTEST_KEEP") == "" {
		os.RemoveAll(c.Dir)
	}
}

// freePorts are n distinct free ports for the daemons to listen on
// (testenv.FreePort: below the ephemeral range, which outgoing connections
// draw from until the daemons bind).
func freePorts(n int) ([]int, error) {
	var ports []int
	for len(ports) < n {
		p, err := testenv.FreePort()
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return ports, nil
}

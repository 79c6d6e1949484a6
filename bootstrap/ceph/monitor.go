// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package ceph

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// monitorScript is the helper's program (monitor.py).
//
//go:embed monitor.py
var monitorScript string

var monitorStarts = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mgr_bootstrap_ceph_monitor_starts_total",
	Help: "Starts of the long-lived mgr map reader (a Python process on the rados binding), by result (ok, failed).",
}, []string{"result"})

func init() { metrics.Registry.MustRegister(monitorStarts) }

// Monitor reads mgr maps (`mgr stat`) over one librados connection per
// cluster, kept open in one long-lived helper process (monitor.py, on the
// rados Python binding that the ceph CLI itself runs on). A read costs about
// 1 ms of CPU instead of the CLI's Python and librados start (about 0.35 s,
// docs/performance.md), which is what makes a role pass over a fleet of
// clusters cheap. The admin key reaches the helper through its stdin pipe,
// never a file. The helper is started on first use and again after it dies;
// each request runs in a thread of its own there, so a cluster whose mon never
// answers holds up no other.
type Monitor struct {
	// Python runs the helper: an interpreter that has the rados binding.
	Python string
	// Timeout bounds each read, the connection included (DefaultStatTimeout when zero).
	Timeout time.Duration

	mu      sync.Mutex
	proc    *monitorProc
	retryAt time.Time // no start before this, after a failed one
	lastErr error
}

// monitorProc is one running helper and the requests waiting for it.
type monitorProc struct {
	pid     int
	stdin   io.WriteCloser
	wmu     sync.Mutex
	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan monitorAnswer
	done    chan struct{}
	err     error // why it ended, once done is closed
}

type monitorRequest struct {
	ID      int64  `json:"id"`
	Cluster string `json:"cluster"`
	Close   bool   `json:"close,omitempty"`
	MonHost string `json:"mon_host,omitempty"`
	Key     string `json:"key,omitempty"`
	Cmd     string `json:"cmd,omitempty"`
	Timeout int    `json:"timeout,omitempty"`
}

type monitorAnswer struct {
	ID          int64  `json:"id"`
	Ready       bool   `json:"ready"`
	Ret         int    `json:"ret"`
	Out         string `json:"out"`
	Err         string `json:"err"`
	Unavailable bool   `json:"unavailable"`
}

// PythonOf is the interpreter the ceph CLI at bin runs on, which has the
// rados binding: the CLI's own #! line, or, for a wrapper that is not a
// Python script (hack/ceph-release.sh), the ceph-python3 beside it.
func PythonOf(bin string) (string, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, _ := bufio.NewReader(io.LimitReader(f, 256)).ReadString('\n')
	if words := strings.Fields(strings.TrimPrefix(line, "#!")); strings.HasPrefix(line, "#!") && len(words) > 0 {
		interp := words[0]
		if filepath.Base(interp) == "env" && len(words) > 1 {
			interp = words[1]
		}
		if strings.HasPrefix(filepath.Base(interp), "python") {
			return interp, nil
		}
	}
	beside := filepath.Join(filepath.Dir(path), "ceph-python3")
	if _, err := os.Stat(beside); err == nil {
		return beside, nil
	}
	return "", fmt.Errorf("%s is not a Python script and has no ceph-python3 beside it: set the interpreter that has the rados binding", path)
}

func (m *Monitor) timeout() time.Duration {
	if m.Timeout > 0 {
		return m.Timeout
	}
	return DefaultStatTimeout
}

// MgrStat reads cluster conn's mgr map summary, as `ceph mgr stat` does.
func (m *Monitor) MgrStat(ctx context.Context, conn Conn) (MgrStat, error) {
	var st MgrStat
	err := m.Read(ctx, conn, "mgr stat", &st)
	return st, err
}

// Read runs the read-only mon command prefix (one without arguments, such
// as "mgr stat" or "osd dump") over the kept connection and decodes its
// JSON answer into v.
func (m *Monitor) Read(ctx context.Context, conn Conn, prefix string, v any) error {
	start := time.Now()
	cmd, _ := json.Marshal(map[string]string{"prefix": prefix, "format": "json"}) // two strings always marshal
	out, err := m.command(ctx, conn, string(cmd))
	if err == nil {
		if err = json.Unmarshal(out, v); err != nil {
			err = &Error{Command: prefix, Message: "unexpected output: " + err.Error()}
		}
	}
	if !errors.Is(err, ErrNoMonitor) {
		callSeconds.WithLabelValues(prefix).Observe(time.Since(start).Seconds())
		calls.WithLabelValues(prefix, string(Read), resultOf(err)).Inc()
	}
	return err
}

// ErrNoMonitor is the answer while the helper cannot run (no interpreter,
// no rados binding): the caller asks the CLI instead.
var ErrNoMonitor = errors.New("the mgr map reader is not running")

// Forget closes the connection to cluster, if the helper holds one.
func (m *Monitor) Forget(cluster string) {
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	if p == nil {
		return
	}
	ch, err := p.send(monitorRequest{Cluster: cluster, Close: true})
	if err == nil {
		p.forget(ch)
	}
}

// Close stops the helper; the connections close with it.
func (m *Monitor) Close() {
	m.mu.Lock()
	p := m.proc
	m.proc = nil
	m.mu.Unlock()
	if p != nil {
		p.stdin.Close()
	}
}

func (m *Monitor) command(ctx context.Context, conn Conn, cmd string) ([]byte, error) {
	key, err := adminKey(conn.AdminKeyring)
	if err != nil {
		return nil, &Error{Command: "mgr stat", Message: err.Error()}
	}
	if strings.ContainsAny(conn.MonHost, "\r\n") {
		return nil, &Error{Command: "mgr stat", Message: "mon_host (Secret rook-ceph-config) holds a line break; it must be one line of mon addresses"}
	}
	p, err := m.running()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoMonitor, err)
	}
	timeout := m.timeout()
	ch, err := p.send(monitorRequest{Cluster: conn.Cluster, MonHost: conn.MonHost, Key: key, Cmd: cmd, Timeout: max(1, int(timeout.Seconds()))})
	if err != nil {
		return nil, &Error{Command: "mgr stat", Message: "mgr map reader: " + err.Error()}
	}
	// The helper bounds the call by the same timeout; the slack covers a
	// connect and a command each taking nearly all of it.
	ctx, cancel := context.WithTimeout(ctx, 2*timeout+time.Second)
	defer cancel()
	select {
	case a := <-ch:
		switch {
		case a.Unavailable:
			return nil, &Error{Command: "mgr stat", Unavailable: true, Message: fmt.Sprintf("no answer within %s (%s)", timeout, a.Err)}
		case a.Ret != 0:
			return nil, &Error{Command: "mgr stat", Errno: syscall.Errno(-a.Ret), Message: stableMessage(firstLine(Redact(a.Err)))}
		}
		return []byte(a.Out), nil
	case <-p.done:
		return nil, &Error{Command: "mgr stat", Unavailable: true, Message: "mgr map reader exited: " + p.err.Error()}
	case <-ctx.Done():
		p.forget(ch)
		return nil, &Error{Command: "mgr stat", Unavailable: true, Message: fmt.Sprintf("no answer within %s", timeout)}
	}
}

// running returns the helper, started if it is not running; after a failed
// start it waits 10 s before the next, so a missing binding is not a loop of
// process starts.
func (m *Monitor) running() (*monitorProc, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil {
		select {
		case <-m.proc.done:
			m.proc = nil
		default:
			return m.proc, nil
		}
	}
	if time.Now().Before(m.retryAt) {
		return nil, m.lastErr
	}
	p, err := startMonitor(m.Python)
	if err != nil {
		monitorStarts.WithLabelValues("failed").Inc()
		m.retryAt, m.lastErr = time.Now().Add(10*time.Second), err
		return nil, err
	}
	monitorStarts.WithLabelValues("ok").Inc()
	m.proc = p
	return p, nil
}

func startMonitor(python string) (*monitorProc, error) {
	if python == "" {
		return nil, errors.New("no Python interpreter set")
	}
	if err := noCoreDumps(); err != nil {
		return nil, fmt.Errorf("cannot disable core dumps (RLIMIT_CORE): %w", err)
	}
	// -I: no PYTHON* variables, no user site; an empty environment keeps
	// CEPH_ARGS and the like out of librados.
	cmd := exec.Command(python, "-I", "-c", monitorScript)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &monitorProc{stdin: stdin, pending: map[int64]chan monitorAnswer{}, done: make(chan struct{})}
	if err := startLocked(cmd, p.done); err != nil {
		return nil, err
	}
	p.pid = cmd.Process.Pid
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	ready := make(chan bool, 1)
	go func() {
		first := true
		for sc.Scan() {
			var a monitorAnswer
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				continue
			}
			if first {
				first = false
				ready <- a.Ready
				continue
			}
			p.deliver(a)
		}
		if first {
			ready <- false
		}
		werr := cmd.Wait()
		p.mu.Lock()
		p.err = fmt.Errorf("%v: %s", werr, firstLine(Redact(stderr.String())))
		p.mu.Unlock()
		close(p.done)
	}()
	select {
	case ok := <-ready:
		if !ok {
			<-p.done
			return nil, p.err
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-p.done
		return nil, errors.New("the helper did not start within 30s")
	}
	return p, nil
}

func (p *monitorProc) send(req monitorRequest) (chan monitorAnswer, error) {
	ch := make(chan monitorAnswer, 1)
	p.mu.Lock()
	p.nextID++
	req.ID = p.nextID
	p.pending[req.ID] = ch
	p.mu.Unlock()
	line, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	p.wmu.Lock()
	_, err = p.stdin.Write(append(line, '\n'))
	p.wmu.Unlock()
	if err != nil {
		p.forget(ch)
		return nil, err
	}
	return ch, nil
}

func (p *monitorProc) deliver(a monitorAnswer) {
	p.mu.Lock()
	ch, ok := p.pending[a.ID]
	delete(p.pending, a.ID)
	p.mu.Unlock()
	if ok {
		ch <- a
	}
}

// forget drops a request nobody waits for any more.
func (p *monitorProc) forget(ch chan monitorAnswer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, c := range p.pending {
		if c == ch {
			delete(p.pending, id)
		}
	}
}

// adminKey is the key of a keyring file's `key = ...` line.
func adminKey(keyring []byte) (string, error) {
	for _, line := range strings.Split(string(keyring), "\n") {
		name, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && strings.TrimSpace(name) == "key" && strings.TrimSpace(value) != "" {
			return strings.TrimSpace(value), nil
		}
	}
	return "", errors.New("the admin keyring (Secret rook-ceph-admin-keyring) has no key line")
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(b []byte) (int, error) {
	if l.n > 0 {
		k := min(len(b), l.n)
		l.n -= k
		_, _ = l.w.Write(b[:k])
	}
	return len(b), nil
}

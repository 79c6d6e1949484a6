// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package ceph runs the ceph CLI against a cluster the way Rook's operator
// does (--connect-timeout --cluster --conf --keyring --format json), one call
// per deadline, with the admin credentials passed to the child as in-memory
// files (memfd, /dev/fd/N), never written to disk, and the child bound to
// die with the controller. Errors are typed from the exit code and stderr so
// callers can decide to retry; no key material ever reaches an error, a log
// line or a metric.
package ceph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Conn says how to reach one Ceph cluster as client.admin.
type Conn struct {
	// Cluster is the cluster's name: its namespace, as in Rook.
	Cluster string
	// MonHost is the mon_host value (Secret rook-ceph-config).
	MonHost string
	// AdminKeyring is the client.admin keyring file (Secret rook-ceph-admin-keyring).
	AdminKeyring []byte
}

// The Runner's deadlines when none is set (mgr-bootstrap's flags default to them).
const (
	DefaultTimeout        = 30 * time.Second
	DefaultConnectTimeout = 15 * time.Second
	// DefaultStatTimeout bounds a Monitor read: it is read-only and asked of
	// every cluster each pass, so a dark cluster must cost little.
	DefaultStatTimeout = 5 * time.Second
)

// Runner runs ceph CLI commands.
type Runner struct {
	// Binary is the ceph CLI; "ceph" from PATH when empty.
	Binary string
	// ConnectTimeout bounds the mon connection (--connect-timeout).
	ConnectTimeout time.Duration
	// Timeout bounds each whole call: --connect-timeout does not bound a
	// command a stuck or restarting mgr never answers.
	Timeout time.Duration
	// Monitor, when set, answers `mgr stat` over connections it keeps open.
	Monitor *Monitor
}

// Error is a failed ceph call.
type Error struct {
	// Command is the command's name, e.g. "auth get-or-create-key".
	Command string
	// Errno is the exit status, which the ceph CLI sets to the errno of the
	// failure (22 EINVAL, 2 ENOENT, ...); 0 when the process did not exit.
	Errno syscall.Errno
	// Unavailable is set when the cluster could not be reached in time.
	Unavailable bool
	// Message is the first line of stderr, redacted: the CLI prints a key it
	// cannot decode (`... type=key val=<key>: Malformed input`), so every
	// value after val= or key = and every cephx-key-shaped token is cut.
	Message string
}

func (e *Error) Error() string {
	switch {
	case e.Unavailable:
		return fmt.Sprintf("ceph %s: cluster unreachable: %s", e.Command, e.Message)
	case e.Errno != 0:
		return fmt.Sprintf("ceph %s: %s (errno %d): %s", e.Command, errnoName(e.Errno), int(e.Errno), e.Message)
	default:
		return fmt.Sprintf("ceph %s: %s", e.Command, e.Message)
	}
}

func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.EINVAL:
		return "EINVAL"
	case syscall.ENOENT:
		return "ENOENT"
	case syscall.EEXIST:
		return "EEXIST"
	case syscall.EBUSY:
		return "EBUSY"
	case syscall.EAGAIN:
		return "EAGAIN"
	case syscall.EPERM:
		return "EPERM"
	case syscall.EACCES:
		return "EACCES"
	case syscall.ETIMEDOUT:
		return "ETIMEDOUT"
	}
	return "error"
}

func hasErrno(err error, codes ...syscall.Errno) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	for _, c := range codes {
		if e.Errno == c {
			return true
		}
	}
	return false
}

// IsInvalid reports EINVAL: a key exists with other caps, or a module is not
// ready for the command yet (while the mgr restarts).
func IsInvalid(err error) bool { return hasErrno(err, syscall.EINVAL) }

// IsNotFound reports ENOENT.
func IsNotFound(err error) bool { return hasErrno(err, syscall.ENOENT) }

// IsRetryable reports answers a restarting mgr gives: a command not (yet)
// registered because its module is loading, EBUSY, EAGAIN, ETIMEDOUT, or no
// answer in time. Any other EINVAL (bad arguments, a value or name the module
// refuses) is permanent: waiting does not change it.
func IsRetryable(err error) bool {
	return IsUnavailable(err) || IsUnknownCommand(err) || hasErrno(err, syscall.EBUSY, syscall.EAGAIN, syscall.ETIMEDOUT)
}

// IsUnknownCommand reports the CLI's answer to a command that neither the
// mons nor the active mgr offer: EINVAL with "no valid command found". A
// module's commands give it while the module loads.
func IsUnknownCommand(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Errno == syscall.EINVAL && strings.HasPrefix(e.Message, "no valid command found")
}

// IsUnavailable reports that the cluster could not be reached in time.
func IsUnavailable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Unavailable
}

var (
	calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mgr_bootstrap_ceph_calls_total",
		Help: "ceph CLI calls, by command, kind (read or write) and result (ok, or the error class).",
	}, []string{"command", "kind", "result"})
	callSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mgr_bootstrap_ceph_call_duration_seconds",
		Help:    "Latency of ceph CLI calls, by command.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	}, []string{"command"})
)

func init() { metrics.Registry.MustRegister(calls, callSeconds) }

// Kind says whether a command changes the cluster.
type Kind string

// Kinds of commands.
const (
	Read  Kind = "read"
	Write Kind = "write"
)

// Command is one ceph CLI command: its name (the metric label), whether it
// writes, and its words.
type Command struct {
	Name string
	Kind Kind
	Args []string
	// Stdin is passed with -i - (passwords); never logged.
	Stdin []byte
}

// Run executes c and returns its stdout.
func (r *Runner) Run(ctx context.Context, conn Conn, c Command) ([]byte, error) {
	start := time.Now()
	out, err := r.run(ctx, conn, c)
	callSeconds.WithLabelValues(c.Name).Observe(time.Since(start).Seconds())
	calls.WithLabelValues(c.Name, string(c.Kind), resultOf(err)).Inc()
	return out, err
}

func resultOf(err error) string {
	var e *Error
	switch {
	case err == nil:
		return "ok"
	case !errors.As(err, &e):
		return "error"
	case e.Unavailable:
		return "unavailable"
	case e.Errno != 0:
		return strings.ToLower(errnoName(e.Errno))
	}
	return "error"
}

// noCoreDumps is set once: a core dump of the controller or of a ceph child
// would hold the admin key, and the node's core_pattern may keep it.
var noCoreDumps = sync.OnceValue(func() error {
	return unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: 0})
})

func (r *Runner) run(ctx context.Context, conn Conn, c Command) ([]byte, error) {
	if err := noCoreDumps(); err != nil {
		return nil, &Error{Command: c.Name, Message: "cannot disable core dumps (RLIMIT_CORE): " + err.Error()}
	}
	// mon_host goes into ceph.conf verbatim: a line break would add options.
	if strings.ContainsAny(conn.MonHost, "\r\n") {
		return nil, &Error{Command: c.Name, Message: "mon_host (Secret rook-ceph-config) holds a line break; it must be one line of mon addresses"}
	}
	timeout, connect := r.Timeout, r.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if connect <= 0 {
		connect = DefaultConnectTimeout
	}
	// The child bounds itself too (rados_mon_op_timeout covers mon and mgr
	// commands), so no ceph process outlives its call by much even if this
	// one cannot kill it.
	confText := fmt.Sprintf("[global]\nmon_host = %s\nrados_mon_op_timeout = %d\nclient_mount_timeout = %d\n",
		conn.MonHost, int(timeout.Seconds()), int(connect.Seconds()))
	conf, err := memFile("ceph.conf", []byte(confText))
	if err != nil {
		return nil, &Error{Command: c.Name, Message: "ceph.conf: " + err.Error()}
	}
	defer conf.Close()
	keyring, err := memFile("keyring", conn.AdminKeyring)
	if err != nil {
		return nil, &Error{Command: c.Name, Message: "keyring: " + err.Error()}
	}
	defer keyring.Close()

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	bin := r.Binary
	if bin == "" {
		bin = "ceph"
	}
	// ExtraFiles become the child's fds 3 and 4: the credentials are read
	// from memory, never from a file another process or a crash could leave.
	args := append(append([]string(nil), c.Args...),
		fmt.Sprintf("--connect-timeout=%d", int(connect.Seconds())),
		"--cluster="+conn.Cluster, "--conf=/dev/fd/3", "--keyring=/dev/fd/4", "--format", "json")
	if c.Stdin != nil {
		args = append(args, "-i", "-")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.ExtraFiles = []*os.File{conf, keyring}
	// The child dies with the controller, even when it is SIGKILLed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if c.Stdin != nil {
		cmd.Stdin = bytes.NewReader(c.Stdin)
	}
	err = runLocked(cmd)
	if err == nil {
		return stdout.Bytes(), nil
	}
	msg := stableMessage(firstLine(Redact(stderr.String())))
	if ctx.Err() != nil {
		return nil, &Error{Command: c.Name, Unavailable: true, Message: fmt.Sprintf("no answer within %s", timeout)}
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return nil, &Error{Command: c.Name, Message: err.Error()}
	}
	code := syscall.Errno(exit.ExitCode())
	if code == 1 && (strings.Contains(msg, "timed out") || strings.Contains(msg, "error connecting")) {
		return nil, &Error{Command: c.Name, Unavailable: true, Message: msg}
	}
	// Judged on the raw output: redaction cuts the line after val=.
	if raw := stderr.String(); strings.Contains(raw, "type=key") && strings.Contains(raw, "Malformed input") {
		msg += "; this ceph CLI cannot read the admin key: if it is intact, the cluster runs a release newer than the CLI " +
			"(Tentacle 20.2 makes keys of a new type), so run a controller image whose CLI is at least as new as the cluster"
	}
	return nil, &Error{Command: c.Name, Errno: code, Message: msg}
}

// runLocked runs cmd to its end from a locked OS thread (startLocked).
func runLocked(cmd *exec.Cmd) error {
	ended := make(chan struct{})
	defer close(ended)
	if err := startLocked(cmd, ended); err != nil {
		return err
	}
	return cmd.Wait()
}

// startLocked starts cmd from a locked OS thread. A child's Pdeathsig fires
// when the thread that started it exits, and the Go runtime may retire an
// idle thread, so the thread stays locked to this goroutine until the child
// has ended (until closes). It is then unlocked, not ended: ending a thread
// would fire the Pdeathsig of any child some other goroutine once started
// from it.
func startLocked(cmd *exec.Cmd, until <-chan struct{}) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			errc <- err
			return
		}
		errc <- nil
		<-until
	}()
	return <-errc
}

// memFile is an anonymous in-memory file holding data (memfd), sealed
// against change; it never appears in any directory.
func memFile(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("mgr-bootstrap-"+name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// RemoveStale deletes the credential directories that versions before the
// memfd runner left in dir (os.TempDir() when empty) when killed mid-call,
// once they are older than any call could last (10 minutes): a directory of
// an older replica still running beside this one is in use, not stale. It
// returns how many it removed.
func RemoveStale(dir string) (int, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	stale, err := filepath.Glob(filepath.Join(dir, "mgr-bootstrap-ceph-*"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range stale {
		if info, err := os.Stat(d); err != nil || time.Since(info.ModTime()) < 10*time.Minute {
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// logPrefix is the start of a Ceph log line: timestamp, thread, level.
var logPrefix = regexp.MustCompile(`^\d{4}-\d\d-\d\dT[0-9:.]+[+-]\d{4} [0-9a-f]+ +-?\d+ `)

// stableMessage drops what differs between two runs of the same failing call
// (the log prefix), so that a status or Event quoting it does not change on
// every retry.
func stableMessage(msg string) string {
	return logPrefix.ReplaceAllString(msg, "")
}

var (
	valueRE     = regexp.MustCompile(`(val=).*`)
	keyAssignRE = regexp.MustCompile(`(?i)(\bkey\s*[=:]\s*).*`)
	// tokenRE is a run of base64 long enough to be a key or a piece of one.
	tokenRE = regexp.MustCompile(`[A-Za-z0-9+/]{16,}={0,2}`)
	// cephxRE is the start of a cephx key (its encoded type, 1, is "AQ"),
	// cut short.
	cephxRE = regexp.MustCompile(`\bAQ[A-Za-z0-9+/]{6,}={0,2}`)
)

// Redact cuts what may be key material from ceph's output: everything after
// val= and after key = (or key:) to the end of the line, and every
// key-shaped token: a cephx key's start (AQ...), a base64 run of 32 or more
// characters (a cephx key is 40), and one of 16 or more that mixes upper and
// lower case and digits (a key cut by a space or a colon). It runs on the
// whole text, before anything is cut to length, so no fragment of a key
// survives a truncation.
func Redact(s string) string {
	s = valueRE.ReplaceAllString(s, "${1}<redacted>")
	s = keyAssignRE.ReplaceAllString(s, "${1}<redacted>")
	s = cephxRE.ReplaceAllString(s, "<redacted>")
	return tokenRE.ReplaceAllStringFunc(s, func(tok string) string {
		if len(tok) >= 32 || keyShaped(tok) {
			return "<redacted>"
		}
		return tok
	})
}

// keyShaped: upper and lower case letters and digits, as random base64 has
// and words and paths do not.
func keyShaped(tok string) bool {
	var upper, lower, digit bool
	for _, c := range tok {
		switch {
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= '0' && c <= '9':
			digit = true
		}
	}
	return upper && lower && digit
}

// firstLine keeps the first non-empty line of stderr, bounded.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 240 {
				l = l[:240] + "..."
			}
			return l
		}
	}
	return "no message"
}

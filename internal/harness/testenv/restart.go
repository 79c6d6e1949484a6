// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// RestartAPIServer kills kube-apiserver (SIGKILL: a crash, or the end of a
// restart's grace period; its SIGTERM drain waits up to a minute for open
// watches) and starts it again with the same flags, certificates and etcd,
// so that every client keeps its credentials. It returns how long the API
// server did not answer /readyz, from the kill.
func (a *APIServer) RestartAPIServer(ctx context.Context) (time.Duration, error) {
	pid, err := a.apiServerPid()
	if err != nil {
		return 0, err
	}
	args, err := cmdline(pid)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if a.restarted != nil {
		a.restarted.Kill()
	} else {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return 0, err
		}
		// envtest reaps its own child; wait until it is gone.
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH), nil
		}); err != nil {
			return 0, fmt.Errorf("kube-apiserver (pid %d) still there after SIGKILL: %w", pid, err)
		}
	}
	logDir, err := os.MkdirTemp("", "kube-apiserver-restarted-")
	if err != nil {
		return 0, err
	}
	p, err := Spawn(args[0], filepath.Join(logDir, "kube-apiserver.log"), args[1:]...)
	if err != nil {
		return 0, err
	}
	a.restarted = p
	cs, err := kubernetes.NewForConfig(a.Config)
	if err != nil {
		return 0, err
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if p.Exited() {
			log, _ := os.ReadFile(p.Log)
			return false, fmt.Errorf("the restarted kube-apiserver exited:\n%s", tail(log, 2000))
		}
		body, err := cs.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
	return time.Since(start), err
}

// apiServerPid is the running kube-apiserver's: the restarted one, or
// envtest's child of this process.
func (a *APIServer) apiServerPid() (int, error) {
	if a.restarted != nil {
		return a.restarted.Pid(), nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(stat)
		closing := strings.LastIndexByte(s, ')')
		if closing < 0 || !strings.Contains(s[:closing], "(kube-apiserver") {
			continue
		}
		if f := strings.Fields(s[closing+1:]); len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			return pid, nil
		}
	}
	return 0, errors.New("no kube-apiserver child of this process")
}

func cmdline(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, err
	}
	args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	if len(args) == 0 || args[0] == "" {
		return nil, fmt.Errorf("empty command line of pid %d", pid)
	}
	return args, nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

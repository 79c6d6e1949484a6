// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
)

// scriptedCeph answers Run from a script, in order, and records the calls;
// the other methods are not used by runStep.
type scriptedCeph struct {
	Ceph
	answers []error
	calls   []ceph.Command
}

func (s *scriptedCeph) Run(_ context.Context, _ ceph.Conn, c ceph.Command) ([]byte, error) {
	s.calls = append(s.calls, c)
	if len(s.answers) == 0 {
		return nil, nil
	}
	err := s.answers[0]
	s.answers = s.answers[1:]
	return nil, err
}

func cephErr(errno syscall.Errno, msg string) error {
	return &ceph.Error{Command: "x", Errno: errno, Message: msg}
}

// TestRunStep: what a planned step does with each answer. A permanent EINVAL
// ends the step at once (an Error within the reconcile, not minutes of
// retries); a module still loading is waited for.
func TestRunStep(t *testing.T) {
	set := ceph.Command{Name: "dashboard ac-user-set-password", Args: []string{"dashboard", "ac-user-set-password", "admin"}}
	create := ceph.Command{Name: "dashboard ac-user-create", Args: []string{"dashboard", "ac-user-create", "admin"}}
	exists := ceph.Command{Name: "config-key exists", Args: []string{"config-key", "exists", "k"}}
	for name, tc := range map[string]struct {
		step    step
		answers []error
		calls   []string // command names, in order
		wantErr string
	}{
		"permanent EINVAL: one call, an error naming the command": {
			step: step{Cmd: set, Retry: true}, answers: []error{cephErr(syscall.EINVAL, "Invalid command: unused arguments: ['--force-password']")},
			calls: []string{set.Name}, wantErr: "ceph dashboard ac-user-set-password admin: ceph x: EINVAL",
		},
		"a module still loading is waited for": {
			step: step{Cmd: set, Retry: true}, answers: []error{cephErr(syscall.EINVAL, "no valid command found; 10 closest matches:"), cephErr(syscall.EAGAIN, "try again")},
			calls: []string{set.Name, set.Name, set.Name},
		},
		"without Retry, a restarting mgr is an error": {
			step: step{Cmd: set}, answers: []error{cephErr(syscall.EBUSY, "busy")},
			calls: []string{set.Name}, wantErr: "EBUSY",
		},
		"ENOENT runs the fallback": {
			step: step{Cmd: set, OnNotFound: &create, Password: true}, answers: []error{cephErr(syscall.ENOENT, "User admin does not exist")},
			calls: []string{set.Name, create.Name},
		},
		"Unless answering 0 skips the command": {
			step: step{Cmd: set, Unless: &exists}, calls: []string{exists.Name},
		},
		"Unless answering ENOENT runs it": {
			step: step{Cmd: set, Unless: &exists}, answers: []error{cephErr(syscall.ENOENT, "")}, calls: []string{exists.Name, set.Name},
		},
		"Unless failing otherwise is the error": {
			step: step{Cmd: set, Unless: &exists}, answers: []error{cephErr(syscall.EACCES, "denied")}, calls: []string{exists.Name}, wantErr: "EACCES",
		},
	} {
		t.Run(name, func(t *testing.T) {
			fc := &scriptedCeph{answers: tc.answers}
			b := &scope{r: &Reconciler{Ceph: fc, Options: Options{ModuleTimeout: time.Minute, RetryInterval: time.Millisecond}}, id: "a"}
			start := time.Now()
			err := b.runStep(context.Background(), ceph.Conn{}, tc.step, []byte("s3cret"))
			if time.Since(start) > 5*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
			var names []string
			for _, c := range fc.calls {
				names = append(names, c.Name)
				if tc.step.Password && c.Name != exists.Name && string(c.Stdin) != "s3cret" {
					t.Errorf("%s ran without the password on stdin", c.Name)
				}
				if !tc.step.Password && c.Stdin != nil {
					t.Errorf("%s got stdin it did not ask for", c.Name)
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.calls, ",") {
				t.Errorf("calls %v, want %v", names, tc.calls)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the password reached an error: %v", err)
			}
		})
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/cluster"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// scriptedCeph answers Run from a script, in order, and records the calls;
// the other methods are not used by runCall.
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
		step    cephCall
		answers []error
		calls   []string // command names, in order
		wantErr string
	}{
		"permanent EINVAL: one call, an error naming the command": {
			step: cephCall{Cmd: set, Retry: true}, answers: []error{cephErr(syscall.EINVAL, "Invalid command: unused arguments: ['--force-password']")},
			calls: []string{set.Name}, wantErr: "ceph dashboard ac-user-set-password admin: ceph x: EINVAL",
		},
		"a module still loading is waited for": {
			step: cephCall{Cmd: set, Retry: true}, answers: []error{cephErr(syscall.EINVAL, "no valid command found; 10 closest matches:"), cephErr(syscall.EAGAIN, "try again")},
			calls: []string{set.Name, set.Name, set.Name},
		},
		"without Retry, a restarting mgr is an error": {
			step: cephCall{Cmd: set}, answers: []error{cephErr(syscall.EBUSY, "busy")},
			calls: []string{set.Name}, wantErr: "EBUSY",
		},
		"ENOENT runs the fallback": {
			step: cephCall{Cmd: set, OnNotFound: &create, Password: true}, answers: []error{cephErr(syscall.ENOENT, "User admin does not exist")},
			calls: []string{set.Name, create.Name},
		},
		"Unless answering 0 skips the command": {
			step: cephCall{Cmd: set, Unless: &exists}, calls: []string{exists.Name},
		},
		"Unless answering ENOENT runs it": {
			step: cephCall{Cmd: set, Unless: &exists}, answers: []error{cephErr(syscall.ENOENT, "")}, calls: []string{exists.Name, set.Name},
		},
		"Unless failing otherwise is the error": {
			step: cephCall{Cmd: set, Unless: &exists}, answers: []error{cephErr(syscall.EACCES, "denied")}, calls: []string{exists.Name}, wantErr: "EACCES",
		},
	} {
		t.Run(name, func(t *testing.T) {
			fc := &scriptedCeph{answers: tc.answers}
			r := &Reconciler{Ceph: fc, Clusters: cluster.New(nil, fc, nil, 0), Options: Options{ModuleTimeout: time.Minute, RetryInterval: time.Millisecond}}
			start := time.Now()
			err := r.runCall(t.Context(), ceph.Conn{}, tc.step, []byte("s3cret"))
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

// An unknown command ("no valid command found") is waited for
// UnknownCommandWindow at most, however long ModuleTimeout is; the window
// starts at the first unknown answer and other retryable answers restart it.
func TestUnknownCommandWindow(t *testing.T) {
	if UnknownCommandWindow > time.Minute {
		t.Errorf("UnknownCommandWindow %s, over the minute promised", UnknownCommandWindow)
	}
	unknown := cephErr(syscall.EINVAL, "no valid command found; 10 closest matches:")
	set := ceph.Command{Name: "dashboard set-ssl-certificate", Args: []string{"dashboard", "set-ssl-certificate"}}
	t.Run("always unknown: ends after the window", func(t *testing.T) {
		answers := make([]error, 100000)
		for i := range answers {
			answers[i] = unknown
		}
		fc := &scriptedCeph{answers: answers}
		r := &Reconciler{Ceph: fc, Clusters: cluster.New(nil, fc, nil, 0), Options: Options{ModuleTimeout: time.Hour, RetryInterval: time.Millisecond}, unknownCommandWindow: 200 * time.Millisecond}
		start := time.Now()
		err := r.runCall(t.Context(), ceph.Conn{}, cephCall{Cmd: set, Retry: true}, nil)
		took := time.Since(start)
		if !ceph.IsUnknownCommand(err) {
			t.Errorf("error %v, want the unknown command", err)
		}
		if took < 200*time.Millisecond || took > 30*time.Second {
			t.Errorf("gave up after %s; want the window (200ms), not ModuleTimeout", took)
		}
	})
	t.Run("known at last within the window: done", func(t *testing.T) {
		fc := &scriptedCeph{answers: []error{unknown, unknown, unknown}}
		r := &Reconciler{Ceph: fc, Clusters: cluster.New(nil, fc, nil, 0), Options: Options{ModuleTimeout: time.Hour, RetryInterval: time.Millisecond}, unknownCommandWindow: 10 * time.Second}
		if err := r.runCall(t.Context(), ceph.Conn{}, cephCall{Cmd: set, Retry: true}, nil); err != nil || len(fc.calls) != 4 {
			t.Errorf("error %v after %d calls; want success on the 4th", err, len(fc.calls))
		}
	})
}

func TestContainerPorts(t *testing.T) {
	d := mgr("rook-ceph-mgr-a", "a", "uid-a")
	d.Spec.Template.Spec.Containers = []corev1.Container{
		{Name: "log-collector", Ports: []corev1.ContainerPort{{Name: contract.PortNameDash, ContainerPort: 1}}},
		{Name: contract.MgrContainerName, Ports: []corev1.ContainerPort{{Name: contract.PortNameDash, ContainerPort: 18443}}},
	}
	if got := containerPort(d, contract.PortNameDash, contract.PortDashboard); got != 18443 {
		t.Errorf("dashboard port %d, want the mgr container's 18443 (not a sidecar's)", got)
	}
	if got := containerPort(d, contract.PortNameMetrics, contract.PortMetrics); got != contract.PortMetrics {
		t.Errorf("metrics port %d, want the default %d when the container names none", got, contract.PortMetrics)
	}
}

func TestClusterModules(t *testing.T) {
	annotated := func(name, id, modules string) appsv1.Deployment {
		d := *mgr(name, id, types.UID("uid-"+id))
		d.Annotations = map[string]string{contract.AnnotationModules: modules}
		return d
	}
	plain := *mgr("rook-ceph-mgr-c", "c", "uid-c")
	other := annotated("rook-ceph-mgr-x", "x", "influx")
	other.Namespace = "elsewhere"
	defaults := []string{"prometheus", "dashboard"}
	choices := []string{"prometheus", "dashboard", "rook", "influx"}
	for name, tc := range map[string]struct {
		ds       []appsv1.Deployment
		want     []string
		conflict bool
	}{
		"a module the policy does not offer: the annotation is ignored": {[]appsv1.Deployment{annotated("rook-ceph-mgr-a", "a", "prometheus,nfs"), plain}, defaults, false},
		"an ignored annotation is no conflict":                          {[]appsv1.Deployment{annotated("rook-ceph-mgr-a", "a", "nfs"), annotated("rook-ceph-mgr-b", "b", "prometheus")}, []string{"prometheus"}, false},
		"no annotation: the defaults":                                   {[]appsv1.Deployment{plain}, defaults, false},
		"one annotated, the others follow it":                           {[]appsv1.Deployment{annotated("rook-ceph-mgr-a", "a", "prometheus"), plain}, []string{"prometheus"}, false},
		"the same set spelled differently agrees":                       {[]appsv1.Deployment{annotated("rook-ceph-mgr-a", "a", "prometheus, rook"), annotated("rook-ceph-mgr-b", "b", "prometheus,rook")}, []string{"prometheus", "rook"}, false},
		"an empty annotation is no choice: the defaults":                {[]appsv1.Deployment{annotated("rook-ceph-mgr-a", "a", ""), plain}, defaults, false},
		"a blank list is no choice: the defaults":                       {[]appsv1.Deployment{annotated("rook-ceph-mgr-a", "a", " , "), plain}, defaults, false},
		"two different sets: a conflict, nothing planned":               {[]appsv1.Deployment{annotated("rook-ceph-mgr-a", "a", "prometheus"), annotated("rook-ceph-mgr-b", "b", "dashboard")}, nil, true},
		"another namespace's annotation does not count":                 {[]appsv1.Deployment{plain, other}, defaults, false},
	} {
		t.Run(name, func(t *testing.T) {
			got, conflict := clusterModules(tc.ds, "rook-ceph", defaults, choices)
			if !slices.Equal(got, tc.want) || (conflict != "") != tc.conflict {
				t.Errorf("clusterModules = %v, %q; want %v, conflict %v", got, conflict, tc.want, tc.conflict)
			}
			if tc.conflict && (!strings.Contains(conflict, "rook-ceph-mgr-a") || !strings.Contains(conflict, "rook-ceph-mgr-b") || !strings.Contains(conflict, contract.AnnotationModules)) {
				t.Errorf("the conflict does not name both Deployments and the annotation: %s", conflict)
			}
		})
	}
}

// An editor chooses among the offered modules only: a policy module that is
// not on offer stays in the wanted set whatever the annotation says, so no
// choice makes the controller turn it off.
func TestAChoiceKeepsThePolicyModulesNotOnOffer(t *testing.T) {
	defaults := []string{"rook", "prometheus", "dashboard"}
	choices := []string{"prometheus", "dashboard", "influx"}
	for annotation, want := range map[string][]string{
		"influx":             {"rook", "influx"},
		"prometheus":         {"rook", "prometheus"},
		"dashboard, influx":  {"rook", "dashboard", "influx"},
		"":                   defaults,
		",":                  defaults,
		"rook":               defaults, // not on offer: ignored
		"prometheus,rook":    defaults, // not on offer: ignored
		"prometheus, influx": {"rook", "prometheus", "influx"},
	} {
		d := mgr("rook-ceph-mgr-a", "a", "uid-a")
		d.Annotations = map[string]string{contract.AnnotationModules: annotation}
		if got, conflict := clusterModules([]appsv1.Deployment{*d}, "rook-ceph", defaults, choices); !slices.Equal(got, want) || conflict != "" {
			t.Errorf("annotation %q: modules %v (conflict %q), want %v", annotation, got, conflict, want)
		}
	}
}

// Where the policy offers no module choices, no annotation steers the
// cluster's modules, an empty one (which would turn every module off)
// included, and the Deployment is told why and what to do.
func TestModulesAnnotationWithoutChoices(t *testing.T) {
	defaults := []string{"prometheus", "dashboard"}
	for _, v := range []string{"nfs", "", "prometheus"} {
		d := mgr("rook-ceph-mgr-a", "a", "uid-a")
		d.Annotations = map[string]string{contract.AnnotationModules: v}
		if got, conflict := clusterModules([]appsv1.Deployment{*d}, "rook-ceph", defaults, nil); !slices.Equal(got, defaults) || conflict != "" {
			t.Errorf("annotation %q without choices: modules %v (conflict %q), want the policy's %v", v, got, conflict, defaults)
		}
		if why := notChosen(d, nil); !strings.Contains(why, "moduleChoices") || !strings.Contains(why, "ignored") {
			t.Errorf("annotation %q without choices: %q does not say it is ignored and why", v, why)
		}
	}
	d := mgr("rook-ceph-mgr-a", "a", "uid-a")
	d.Annotations = map[string]string{contract.AnnotationModules: "prometheus, nfs"}
	if why := notChosen(d, []string{"prometheus", "dashboard"}); !strings.Contains(why, "nfs not among") || !strings.Contains(why, "prometheus, dashboard") {
		t.Errorf("a module outside the choices: %q", why)
	}
	d.Annotations[contract.AnnotationModules] = "prometheus"
	if why := notChosen(d, []string{"prometheus"}); why != "" {
		t.Errorf("a chosen module reported: %q", why)
	}
	delete(d.Annotations, contract.AnnotationModules)
	if why := notChosen(d, nil); why != "" {
		t.Errorf("no annotation reported: %q", why)
	}
}

// TestRetryEndsWithTheLastAnswer: a step that keeps getting a restarting
// mgr's answer until ModuleTimeout fails with that answer (the operator
// sees EBUSY, not a deadline); a permanent one ends it at the first call.
func TestRetryEndsWithTheLastAnswer(t *testing.T) {
	r := &Reconciler{Options: Options{ModuleTimeout: 50 * time.Millisecond, RetryInterval: time.Millisecond}}
	for name, tc := range map[string]struct {
		answer   error
		oneCall  bool
		wantErrn syscall.Errno
	}{
		"busy until the timeout": {cephErr(syscall.EBUSY, "busy"), false, syscall.EBUSY},
		"a permanent answer":     {cephErr(syscall.EINVAL, "bad argument"), true, syscall.EINVAL},
	} {
		t.Run(name, func(t *testing.T) {
			calls := 0
			err := r.retry(t.Context(), func(context.Context) error { calls++; return tc.answer })
			var ce *ceph.Error
			if !errors.As(err, &ce) || ce.Errno != tc.wantErrn {
				t.Fatalf("retry = %v, want the step's %v", err, tc.wantErrn)
			}
			if (calls == 1) != tc.oneCall {
				t.Errorf("%d calls", calls)
			}
		})
	}
	calls := 0
	if err := r.retry(t.Context(), func(context.Context) error {
		if calls++; calls < 3 {
			return cephErr(syscall.EAGAIN, "again")
		}
		return nil
	}); err != nil || calls != 3 {
		t.Errorf("a mgr back after two answers: %v after %d calls", err, calls)
	}
}

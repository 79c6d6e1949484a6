// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package recovery

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// TestDecide: a failover only for a failed module the controller turned
// on, with a standby, and only once per budget, at its boundary.
func TestDecide(t *testing.T) {
	now := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	budget := 10 * time.Minute
	failed := map[string]string{"prometheus": "OSError(98, 'Address already in use')", "iostat": "x"}
	for name, tc := range map[string]struct {
		failed   map[string]string
		ours     []string
		standbys int
		last     time.Time
		modules  []string
		failover bool
		held     string
	}{
		"healthy":                    {nil, []string{"prometheus"}, 1, time.Time{}, nil, false, ""},
		"not ours":                   {failed, []string{"dashboard"}, 1, time.Time{}, nil, false, ""},
		"no record":                  {failed, nil, 1, time.Time{}, nil, false, ""},
		"ours, standby, never":       {failed, []string{"prometheus", "dashboard"}, 1, time.Time{}, []string{"prometheus"}, true, ""},
		"two of ours, sorted":        {map[string]string{"rook": "", "dashboard": ""}, []string{"rook", "dashboard"}, 2, time.Time{}, []string{"dashboard", "rook"}, true, ""},
		"no standby":                 {failed, []string{"prometheus"}, 0, time.Time{}, []string{"prometheus"}, false, "no standby mgr"},
		"budget spent, 1 s short":    {failed, []string{"prometheus"}, 1, now.Add(-budget + time.Second), []string{"prometheus"}, false, "next from 2026-12-07T06:00:01Z"},
		"budget back, to the second": {failed, []string{"prometheus"}, 1, now.Add(-budget), []string{"prometheus"}, true, ""},
		"no standby and spent":       {failed, []string{"prometheus"}, 0, now, []string{"prometheus"}, false, "no standby mgr"},
	} {
		t.Run(name, func(t *testing.T) {
			v := decide(tc.failed, tc.ours, tc.standbys, tc.last, now, budget)
			if !slices.Equal(v.Modules, tc.modules) || v.Failover != tc.failover || (tc.held == "") != (v.Held == "") || !strings.Contains(v.Held, tc.held) {
				t.Errorf("decide = %+v, want modules %v, failover %v, held %q", v, tc.modules, tc.failover, tc.held)
			}
		})
	}
}

// fakeCeph answers the config-key reads and mgr stat, and counts calls.
type fakeCeph struct {
	keys   map[string]string
	active string
	calls  []string
}

func (f *fakeCeph) Run(_ context.Context, _ ceph.Conn, c ceph.Command) ([]byte, error) {
	f.calls = append(f.calls, c.Name)
	switch c.Name {
	case "config-key get":
		v, ok := f.keys[c.Args[2]]
		if !ok {
			return nil, &ceph.Error{Command: c.Name, Errno: syscall.ENOENT}
		}
		return []byte(v), nil
	case "config-key set":
		f.keys[c.Args[2]] = c.Args[3]
	case "mgr fail":
		f.active = "b"
	}
	return nil, nil
}

func (f *fakeCeph) MgrStat(context.Context, ceph.Conn) (ceph.MgrStat, error) {
	f.calls = append(f.calls, "mgr stat")
	return ceph.MgrStat{Available: true, ActiveName: f.active}, nil
}

// TestObserveJudgesOnChange: a failure is judged (and told) once while it
// does not change; a change of the errors or the standbys, or the end of
// the interval that held it, judges it again; a failover records its time
// before `mgr fail`, and the reads that follow it (Ceph still reporting the
// old failure) are not judged until a healthy read or the interval's end; a
// healthy read forgets the cluster.
func TestObserveJudgesOnChange(t *testing.T) {
	ctx := t.Context()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-mgr-a",
		Labels: map[string]string{contract.LabelApp: contract.AppName}}}
	cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(d).Build()
	rec := events.NewFakeRecorder(16)
	fc := &fakeCeph{keys: map[string]string{contract.ModulesRecordKey: "prometheus,dashboard"}, active: "a"}
	now := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	r := &Recovery{Client: cl, Recorder: rec, Ceph: fc, Interval: 10 * time.Minute, Now: func() time.Time { return now }}
	failed := ceph.Facts{FailedModules: map[string]string{"prometheus": "Timeout('Port 9283 not free')"}, Standbys: 0}
	told := func() []string {
		var out []string
		for len(rec.Events) > 0 {
			out = append(out, <-rec.Events)
		}
		return out
	}
	step := func(what string, f ceph.Facts, wantCalls []string, wantEvent string) {
		t.Helper()
		fc.calls = nil
		r.Observe(ctx, "rook-ceph", ceph.Conn{}, f)
		if !slices.Equal(fc.calls, wantCalls) {
			t.Errorf("%s: ceph calls %v, want %v", what, fc.calls, wantCalls)
		}
		ev := told()
		if (wantEvent == "") != (len(ev) == 0) || len(ev) > 1 || (wantEvent != "" && !strings.Contains(ev[0], wantEvent)) {
			t.Errorf("%s: Events %q, want one with %q", what, ev, wantEvent)
		}
	}
	judge := []string{"config-key get", "config-key get", "mgr stat"}
	step("first seen, no standby", failed, judge, "ModuleFailoverHeld")
	step("unchanged", failed, nil, "")
	failed.Standbys = 1
	step("a standby came", failed, append(slices.Clone(judge), "config-key set", "mgr fail"), "ModuleFailover mgr module prometheus (Timeout('Port 9283 not free')) failed on the active mgr a")
	if got := fc.keys[contract.ModuleFailoverKey]; got != "2026-12-07T06:00:00Z" {
		t.Errorf("failover recorded as %q", got)
	}
	stale := ceph.Facts{FailedModules: failed.FailedModules, Standbys: 0}
	step("right after the failover: the old failure, no standby yet", stale, nil, "")
	step("healthy", ceph.Facts{Standbys: 1}, nil, "")
	now = now.Add(time.Minute)
	step("failed again within the interval", failed, judge, "next from 2026-12-07T06:10:00Z")
	step("unchanged, interval not over", failed, nil, "")
	now = now.Add(9 * time.Minute)
	step("the interval over", failed, append(slices.Clone(judge), "config-key set", "mgr fail"), "ModuleFailover")
	step("healthy again", ceph.Facts{Standbys: 1}, nil, "")
	other := ceph.Facts{FailedModules: map[string]string{"influx": "x"}, Standbys: 1}
	step("not ours", other, []string{"config-key get", "config-key get"}, "")
	step("not ours, unchanged", other, nil, "")
}

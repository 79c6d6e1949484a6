// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"errors"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
)

var (
	t0          = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	unreachable = &ceph.Error{Command: "mgr stat", Unavailable: true, Message: "no answer within 5s"}
	refused     = &ceph.Error{Command: "auth get-key", Errno: syscall.EACCES, Message: "access denied"}
)

func TestBreaker(t *testing.T) {
	for name, tc := range map[string]struct {
		calls []error // one per second from t0
		at    time.Duration
		open  bool
	}{
		"never failed":                  {at: 0},
		"one failure, within 1s":        {calls: []error{unreachable}, at: 500 * time.Millisecond, open: true},
		"one failure, after 1s":         {calls: []error{unreachable}, at: 1100 * time.Millisecond},
		"three in a row: 4s":            {calls: []error{unreachable, unreachable, unreachable}, at: 2*time.Second + 3900*time.Millisecond, open: true},
		"an answer closes it":           {calls: []error{unreachable, unreachable, nil}, at: 2*time.Second + time.Millisecond},
		"an error answer closes it too": {calls: []error{unreachable, refused}, at: time.Second + time.Millisecond},
		"a refusal is not a call":       {calls: []error{unreachable, &breakerOpen{last: unreachable}}, at: time.Second + time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			var b healthBook
			for i, err := range tc.calls {
				b.record("ns", t0.Add(time.Duration(i)*time.Second), err)
			}
			wait, err := b.refusal("ns", t0.Add(tc.at))
			if (err != nil) != tc.open || (wait > 0) != tc.open {
				t.Fatalf("refusal at +%s: %s, %v; want open=%v", tc.at, wait, err, tc.open)
			}
			if err != nil && (!ceph.IsUnavailable(err) || err.Error() != unreachable.Error()) {
				t.Errorf("a refusal must read as the last real failure (a stable status): %v", err)
			}
			if b.refusal("other", t0.Add(tc.at)); b.failing("other") {
				t.Error("another cluster's breaker moved")
			}
		})
	}
}

func TestBreakerWindow(t *testing.T) {
	want := []time.Duration{0, 1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	for n, w := range want {
		if got := breakerWindow(n); got != w {
			t.Errorf("breakerWindow(%d) = %s, want %s", n, got, w)
		}
	}
	if got := breakerWindow(40); got != breakerMax {
		t.Errorf("breakerWindow(40) = %s, want the cap %s", got, breakerMax)
	}
}

// countingCeph counts the calls that reach Ceph.
type countingCeph struct {
	Ceph
	n   int
	err error
}

func (c *countingCeph) GetKey(context.Context, ceph.Conn, string) (string, error) {
	c.n++
	return "", c.err
}

func TestGuardedMakesNoCallWhileOpen(t *testing.T) {
	inner := &countingCeph{err: unreachable}
	g := guarded{Ceph: inner, book: &healthBook{}}
	conn := ceph.Conn{Cluster: "dark"}
	for range 5 {
		_, err := g.GetKey(context.Background(), conn, "mgr.a")
		if !ceph.IsUnavailable(err) {
			t.Fatalf("got %v", err)
		}
	}
	if inner.n != 1 {
		t.Errorf("%d calls reached an unreachable cluster within its breaker's window; want 1", inner.n)
	}
	var open *breakerOpen
	if _, err := g.GetKey(context.Background(), conn, "mgr.a"); !errors.As(err, &open) {
		t.Errorf("a call not made must say so to the code (breakerOpen): %v", err)
	}
	// Another cluster is not held back.
	if _, err := g.GetKey(context.Background(), ceph.Conn{Cluster: "lit"}, "mgr.a"); inner.n != 2 || err == nil {
		t.Errorf("a call to another cluster: %d calls, %v", inner.n, err)
	}
}

func TestPlanProbes(t *testing.T) {
	interval := 5 * time.Second
	for name, tc := range map[string]struct {
		ask       []string
		states    map[string]probeState
		due, gone []string
	}{
		"new clusters are due":         {ask: []string{"b", "a"}, due: []string{"a", "b"}},
		"not before next":              {ask: []string{"a"}, states: map[string]probeState{"a": {next: t0.Add(2 * time.Second)}}},
		"next within the slack is due": {ask: []string{"a"}, states: map[string]probeState{"a": {next: t0.Add(interval / 20)}}, due: []string{"a"}},
		"one read at a time":           {ask: []string{"a"}, states: map[string]probeState{"a": {inFlight: true, next: t0.Add(-time.Minute)}}},
		"gone when not asked":          {states: map[string]probeState{"a": {next: t0}}, gone: []string{"a"}},
		"kept while being read":        {states: map[string]probeState{"a": {inFlight: true}}},
	} {
		t.Run(name, func(t *testing.T) {
			ask := map[string]bool{}
			for _, ns := range tc.ask {
				ask[ns] = true
			}
			due, gone := planProbes(t0, interval/10, ask, tc.states)
			if !reflect.DeepEqual(due, tc.due) || !reflect.DeepEqual(gone, tc.gone) {
				t.Errorf("due %v gone %v; want %v, %v", due, gone, tc.due, tc.gone)
			}
		})
	}
}

func TestProbeBackoff(t *testing.T) {
	interval, retryMax := 5*time.Second, 20*time.Second
	var s probeState
	var waits []time.Duration
	for _, err := range []error{nil, unreachable, unreachable, unreachable, unreachable, nil} {
		s.inFlight = true
		s = s.after(t0, err, interval, retryMax)
		if s.inFlight {
			t.Fatal("still in flight after its read")
		}
		waits = append(waits, s.next.Sub(t0))
	}
	want := []time.Duration{5 * time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second, 20 * time.Second, 5 * time.Second}
	if !reflect.DeepEqual(waits, want) {
		t.Errorf("waits %v, want %v", waits, want)
	}
}

// A cluster whose breaker an answer closes is announced once (its mgrs are
// retried at once); one that never failed, or still fails, is not.
func TestBreakerAnnouncesAnAnswerAfterFailures(t *testing.T) {
	for name, tc := range map[string]struct {
		calls []error
		want  []string
	}{
		"never failed":               {calls: []error{nil, nil}},
		"still failing":              {calls: []error{unreachable, unreachable}},
		"answers after two failures": {calls: []error{unreachable, unreachable, nil, nil}, want: []string{"ns"}},
		"an error answer counts":     {calls: []error{unreachable, refused}, want: []string{"ns"}},
		"a refusal is no answer":     {calls: []error{unreachable, &breakerOpen{last: unreachable}}},
		"twice down, twice back":     {calls: []error{unreachable, nil, unreachable, nil}, want: []string{"ns", "ns"}},
	} {
		t.Run(name, func(t *testing.T) {
			var got []string
			b := healthBook{answered: func(ns string) { got = append(got, ns) }}
			for i, err := range tc.calls {
				b.record("ns", t0.Add(time.Duration(i)*time.Second), err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("announced %q, want %q", got, tc.want)
			}
		})
	}
}

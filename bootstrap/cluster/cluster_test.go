// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/contract"
)

var (
	t0          = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	unreachable = &ceph.Error{Command: "mgr stat", Unavailable: true, Message: "no answer within 5s"}
	refused     = &ceph.Error{Command: "auth get-key", Errno: syscall.EACCES, Message: "access denied"}
)

// fakeCeph answers GetKey and MgrStat with err, counting the calls that
// reach it, and remembers what it was told to forget.
type fakeCeph struct {
	Ceph
	calls  int
	err    error
	forgot []string
}

func (f *fakeCeph) GetKey(context.Context, ceph.Conn, string) (string, error) {
	f.calls++
	return "", f.err
}

func (f *fakeCeph) MgrStat(context.Context, ceph.Conn) (ceph.MgrStat, error) {
	f.calls++
	return ceph.MgrStat{Available: true, ActiveName: "a"}, f.err
}

func (f *fakeCeph) Forget(ns string) { f.forgot = append(f.forgot, ns) }

// secrets are cluster ns's two Secrets, mon_host monHost.
func secrets(ns, monHost string) []client.Object {
	return []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: contract.ConfigSecretName},
			Data: map[string][]byte{contract.ConfigSecretMonHostKey: []byte(monHost)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: contract.AdminKeyringSecretName},
			Data: map[string][]byte{contract.KeyringKey: []byte("[client.admin]\n")}},
	}
}

// counting is a client holding objs that counts its Gets.
func counting(objs ...client.Object) (client.Client, *int) {
	reads := new(int)
	return fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			*reads++
			return c.Get(ctx, key, obj, opts...)
		}}).Build(), reads
}

func TestBackoff(t *testing.T) {
	want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for n, w := range want {
		if got := Backoff(n, 10*time.Second); got != w {
			t.Errorf("Backoff(%d) = %s, want %s", n, got, w)
		}
	}
	if got := Backoff(400, time.Minute); got != time.Minute {
		t.Errorf("Backoff(400) = %s, want the cap", got)
	}
}

func TestNewDefaultsRetryMax(t *testing.T) {
	for set, want := range map[time.Duration]time.Duration{0: 10 * time.Second, 3 * time.Second: 3 * time.Second, time.Minute: time.Minute} {
		if got := New(nil, nil, nil, set).RetryMax(); got != want {
			t.Errorf("retryMax %s: %s, want %s", set, got, want)
		}
	}
}

// TestBreakerAndClock: an unanswered call opens the cluster's breaker, and
// its clock says when to try again; an answer, even an error, closes it; a
// call not made counts for nothing; another cluster is not touched.
func TestBreakerAndClock(t *testing.T) {
	for name, tc := range map[string]struct {
		calls []error // one per second from t0
		at    time.Duration
		open  bool
		retry time.Duration // RetryAfter at +at
		due   bool          // its probe due at +at
	}{
		"never failed":                  {},
		"one failure, within 1s":        {calls: []error{unreachable}, at: 500 * time.Millisecond, open: true, retry: time.Second},
		"one failure, after 1s":         {calls: []error{unreachable}, at: 1100 * time.Millisecond, open: true, retry: time.Second, due: true},
		"three in a row: 4s":            {calls: []error{unreachable, unreachable, unreachable}, at: 2*time.Second + 1500*time.Millisecond, open: true, retry: 2500 * time.Millisecond},
		"three in a row, probe due":     {calls: []error{unreachable, unreachable, unreachable}, at: 6 * time.Second, open: true, retry: time.Second, due: true},
		"twenty in a row: retry max":    {calls: []error{unreachable, unreachable, unreachable, unreachable, unreachable, unreachable, unreachable, unreachable, unreachable, unreachable, unreachable, unreachable, unreachable, unreachable, unreachable, unreachable, unreachable, unreachable, unreachable, unreachable}, at: 19 * time.Second, open: true, retry: 10 * time.Second},
		"an answer closes it":           {calls: []error{unreachable, unreachable, nil}, at: 2*time.Second + time.Millisecond},
		"an error answer closes it too": {calls: []error{unreachable, refused}, at: time.Second + time.Millisecond},
		"a refusal is not a call":       {calls: []error{unreachable, &BreakerOpen{last: unreachable}}, at: 500 * time.Millisecond, open: true, retry: time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			c := New(nil, &fakeCeph{}, nil, 10*time.Second)
			for i, err := range tc.calls {
				c.observe("ns", t0.Add(time.Duration(i)*time.Second), err)
			}
			now := t0.Add(tc.at)
			if got := c.Unreachable("ns"); got != tc.open {
				t.Fatalf("open %v, want %v", got, tc.open)
			}
			err := c.refusal("ns")
			if (err != nil) != tc.open {
				t.Fatalf("refusal %v; want open=%v", err, tc.open)
			}
			if err != nil && (!ceph.IsUnavailable(err) || err.Error() != unreachable.Error()) {
				t.Errorf("a refusal must read as the last real failure (a stable status): %v", err)
			}
			if got := c.retryAfter("ns", now); got != tc.retry {
				t.Errorf("RetryAfter at +%s: %s, want %s", tc.at, got, tc.retry)
			}
			if got := c.ProbeDue("ns", now, 0); got != tc.due {
				t.Errorf("probe due at +%s: %v, want %v", tc.at, got, tc.due)
			}
			if c.Unreachable("other") || c.retryAfter("other", now) != 0 {
				t.Error("another cluster's breaker moved")
			}
		})
	}
}

// TestGuardedMakesNoCallWhileOpen: once a cluster does not answer, no call
// of a reconcile reaches it, however long; the probe does, and its answer
// closes the breaker and announces the cluster once.
func TestGuardedMakesNoCallWhileOpen(t *testing.T) {
	inner := &fakeCeph{err: unreachable}
	reader := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(secrets("dark", "v2:10.0.0.1:3300")...).Build()
	c := New(reader, inner, nil, 0)
	var announced []string
	c.OnAnswer(func(ns string) { announced = append(announced, ns) })
	g := c.Ceph()
	conn := ceph.Conn{Cluster: "dark"}
	for range 5 {
		if _, err := g.GetKey(t.Context(), conn, "mgr.a"); !ceph.IsUnavailable(err) {
			t.Fatalf("got %v", err)
		}
	}
	if inner.calls != 1 {
		t.Errorf("%d calls reached an unreachable cluster; want 1", inner.calls)
	}
	if _, err := g.GetKey(t.Context(), conn, "mgr.a"); !errors.As(err, new(*BreakerOpen)) {
		t.Errorf("a call not made must say so to the code (BreakerOpen): %v", err)
	}
	if _, err := g.GetKey(t.Context(), ceph.Conn{Cluster: "lit"}, "mgr.a"); inner.calls != 2 || err == nil {
		t.Errorf("a call to another cluster: %d calls, %v", inner.calls, err)
	}
	// The probe goes around the breaker; while unanswered it stays open.
	if _, err := c.Probe(t.Context(), "dark"); !ceph.IsUnavailable(err) || inner.calls != 3 || !c.Unreachable("dark") {
		t.Fatalf("probe of a dark cluster: %v, %d calls, open %v", err, inner.calls, c.Unreachable("dark"))
	}
	inner.err = nil
	if stat, err := c.Probe(t.Context(), "dark"); err != nil || stat.ActiveName != "a" {
		t.Fatalf("probe of a cluster back: %+v, %v", stat, err)
	}
	if c.Unreachable("dark") || !reflect.DeepEqual(announced, []string{"dark"}) {
		t.Errorf("after an answer: open %v, announced %q; want closed, [dark]", c.Unreachable("dark"), announced)
	}
	if _, err := g.GetKey(t.Context(), conn, "mgr.a"); err != nil || inner.calls != 5 {
		t.Errorf("a call after the answer: %v, %d calls", err, inner.calls)
	}
	if _, err := c.Probe(t.Context(), "dark"); err != nil || len(announced) != 1 {
		t.Errorf("a cluster that kept answering was announced again: %q", announced)
	}
	c.Forget("dark", time.Now())
	if !reflect.DeepEqual(inner.forgot, []string{"dark"}) {
		t.Errorf("Forget did not drop the runner's connection: %q", inner.forgot)
	}
}

// TestForgetKeepsAClusterCalledSince: a list that saw no mgr of a cluster
// (its last one deleted) forgets it only if no call reached it since the
// list was made; a new mgr's reconcile that called it keeps it answered, so
// the CephRelease keeper, which reads answered clusters only, still reads it.
func TestForgetKeepsAClusterCalledSince(t *testing.T) {
	inner := &fakeCeph{}
	c := New(nil, inner, nil, 0)
	listed := t0.Add(time.Second)
	c.observe("again", t0.Add(2*time.Second), nil) // the new mgr's call, after the list
	c.Forget("again", listed)
	if !c.Answered("again") || len(inner.forgot) != 0 {
		t.Errorf("a cluster called after the list was forgotten: answered %v, runner forgot %q", c.Answered("again"), inner.forgot)
	}
	c.observe("gone", t0, nil) // its last call, before the list
	c.Forget("gone", listed)
	if c.Answered("gone") || !reflect.DeepEqual(inner.forgot, []string{"gone"}) {
		t.Errorf("a cluster not called since the list was kept: answered %v, runner forgot %q", c.Answered("gone"), inner.forgot)
	}
}

// TestGetAndRecent: Get reads the two Secrets every time and says which are
// missing, or refuses a mon outside the allowed networks; Recent reuses the
// last read while the cluster answers, and reads again once it did not.
func TestGetAndRecent(t *testing.T) {
	ctx := t.Context()
	cl, reads := counting(secrets("rook-ceph", "v2:10.0.0.1:3300")...)
	c := New(cl, &fakeCeph{}, nil, 0)
	for range 2 {
		conn, err := c.Get(ctx, "rook-ceph")
		if err != nil || conn.MonHost != "v2:10.0.0.1:3300" || string(conn.AdminKeyring) != "[client.admin]\n" || conn.Cluster != "rook-ceph" {
			t.Fatalf("Get = %+v, %v", conn, err)
		}
	}
	if *reads != 4 {
		t.Errorf("%d reads for two Gets, want both Secrets each time", *reads)
	}
	if _, err := c.Recent(ctx, "rook-ceph"); err != nil || *reads != 4 {
		t.Errorf("Recent within its TTL read again (%d reads), %v", *reads, err)
	}
	c.observe("rook-ceph", time.Now(), unreachable)
	if _, err := c.Recent(ctx, "rook-ceph"); err != nil || *reads != 6 {
		t.Errorf("Recent of a cluster that did not answer: %d reads, want a fresh read; %v", *reads, err)
	}

	if _, err := c.Get(ctx, "ceph-east"); !errors.Is(err, ErrMissing) ||
		!strings.Contains(err.Error(), contract.ConfigSecretName) || !strings.Contains(err.Error(), contract.AdminKeyringSecretName) {
		t.Errorf("a namespace without the cluster's Secrets: %v", err)
	}
	for _, name := range []string{contract.ConfigSecretName, contract.AdminKeyringSecretName} {
		if err := cl.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ceph-empty", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Get(ctx, "ceph-empty"); !errors.Is(err, ErrMissing) ||
		!strings.Contains(err.Error(), contract.ConfigSecretName+"/"+contract.ConfigSecretMonHostKey) {
		t.Errorf("a namespace whose Secrets lack the keys: %v", err)
	}

	// With the mon networks restricted: a mon outside them is refused before
	// any connection, naming the address and the fix; one inside passes.
	c = New(cl, &fakeCeph{}, []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}, 0)
	if _, err := c.Get(ctx, "rook-ceph"); !errors.Is(err, ErrMonHostRefused) || !strings.Contains(err.Error(), "10.0.0.1") || !strings.Contains(err.Error(), "--mon-networks") {
		t.Errorf("a mon outside --mon-networks: %v", err)
	}
	c = New(cl, &fakeCeph{}, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, 0)
	if conn, err := c.Get(ctx, "rook-ceph"); err != nil || conn.MonHost != "v2:10.0.0.1:3300" {
		t.Errorf("a mon inside --mon-networks: %+v, %v", conn, err)
	}
}

// TestLockGivesUpWithTheContext: one module run per cluster at a time; a
// waiter gives up when its context ends; another cluster is not held.
func TestLockGivesUpWithTheContext(t *testing.T) {
	c := New(nil, &fakeCeph{}, nil, 0)
	unlock, err := c.Lock(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Lock(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second holder of cluster a: %v, want the context's end", err)
	}
	other, err := c.Lock(t.Context(), "b")
	if err != nil {
		t.Fatalf("cluster b held back by a: %v", err)
	}
	other()
	unlock()
	again, err := c.Lock(t.Context(), "a")
	if err != nil {
		t.Fatalf("cluster a after its unlock: %v", err)
	}
	again()
}

// TestUnreachableGauge counts the open breakers: up with each cluster that
// does not answer, down with an answer or a cluster forgotten.
func TestUnreachableGauge(t *testing.T) {
	c := New(nil, &fakeCeph{}, nil, 0)
	gauge := func() float64 { return testutil.ToFloat64(clustersUnreachable) }
	c.observe("a", t0, unreachable)
	c.observe("a", t0, unreachable)
	c.observe("b", t0, unreachable)
	c.observe("c", t0, nil)
	if got := gauge(); got != 2 {
		t.Errorf("two dark clusters, one lit: gauge %v", got)
	}
	c.observe("a", t0, refused)
	if got := gauge(); got != 1 {
		t.Errorf("after a's answer: gauge %v", got)
	}
	c.Forget("b", t0.Add(time.Second))
	if got := gauge(); got != 0 {
		t.Errorf("after b is forgotten: gauge %v", got)
	}
}

// TestProbeDueSlack: a probe within the slack before its time is due (a
// ticker's jitter does not cost a whole interval); earlier is not.
func TestProbeDueSlack(t *testing.T) {
	c := New(nil, &fakeCeph{}, nil, 0)
	c.observe("ns", t0, unreachable)
	c.observe("ns", t0, unreachable) // due at t0+2s
	slack := 500 * time.Millisecond
	if !c.ProbeDue("ns", t0.Add(1600*time.Millisecond), slack) {
		t.Error("within the slack: not due")
	}
	if c.ProbeDue("ns", t0.Add(1400*time.Millisecond), slack) {
		t.Error("before the slack: due")
	}
}

// TestRecentExpires: a kept connection older than ConnTTL is read again.
func TestRecentExpires(t *testing.T) {
	cl, reads := counting(secrets("ns", "v2:10.0.0.1:3300")...)
	c := New(cl, &fakeCeph{}, nil, 0)
	if _, err := c.Recent(t.Context(), "ns"); err != nil || *reads != 2 {
		t.Fatalf("first Recent: %d reads, %v", *reads, err)
	}
	c.m["ns"].connAt = time.Now().Add(-ConnTTL - time.Second)
	if _, err := c.Recent(t.Context(), "ns"); err != nil || *reads != 4 {
		t.Errorf("Recent past its TTL: %d reads (want a fresh read), %v", *reads, err)
	}
}

// TestAnswered: a cluster never tried, or whose last call found it
// unreachable, has not answered; any answer, an error one included, has;
// a refusal while the breaker is open changes nothing.
func TestAnswered(t *testing.T) {
	for name, tc := range map[string]struct {
		calls []error
		want  bool
	}{
		"never tried":                 {},
		"answered":                    {calls: []error{nil}, want: true},
		"an error answer":             {calls: []error{refused}, want: true},
		"unreachable after answering": {calls: []error{nil, unreachable}},
		"answered again":              {calls: []error{unreachable, nil}, want: true},
		"a refusal is not a call":     {calls: []error{nil, unreachable, &BreakerOpen{last: unreachable}}},
	} {
		t.Run(name, func(t *testing.T) {
			c := New(nil, &fakeCeph{}, nil, 0)
			for i, err := range tc.calls {
				c.observe("ns", t0.Add(time.Duration(i)*time.Second), err)
			}
			if got := c.Answered("ns"); got != tc.want {
				t.Errorf("Answered = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestUntried: a cluster is untried until a call is made to it (answered
// or not), and again once it is forgotten.
func TestUntried(t *testing.T) {
	for name, tc := range map[string]struct {
		calls  []error
		forget bool
		want   bool
	}{
		"never called":          {want: true},
		"answered":              {calls: []error{nil}},
		"unreachable":           {calls: []error{unreachable}},
		"forgotten":             {calls: []error{nil}, forget: true, want: true},
		"a refusal is not call": {calls: []error{&BreakerOpen{last: unreachable}}, want: true},
	} {
		t.Run(name, func(t *testing.T) {
			c := New(nil, &fakeCeph{}, nil, 0)
			for i, err := range tc.calls {
				c.observe("ns", t0.Add(time.Duration(i)*time.Second), err)
			}
			if tc.forget {
				c.Forget("ns", t0.Add(time.Hour))
			}
			if got := c.Untried("ns"); got != tc.want {
				t.Errorf("Untried = %v, want %v", got, tc.want)
			}
		})
	}
}

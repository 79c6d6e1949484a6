// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// limiterRig is a connLimiter on a loopback port, serving every connection it
// lets in (holding it open), and clients dialling from chosen loopback
// addresses, as pods and the API server come from their own.
type limiterRig struct {
	t        *testing.T
	l        *connLimiter
	accepted chan net.Conn
}

func newLimiterRig(t *testing.T, perSource, total int) *limiterRig {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &limiterRig{t: t, l: newConnLimiter(ln, perSource, total), accepted: make(chan net.Conn, 64)}
	go func() {
		for {
			c, err := r.l.Accept()
			if err != nil {
				return
			}
			r.accepted <- c
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return r
}

// dial connects from source and reports whether the listener kept the
// connection (an accepted one stays open; a cut one reads EOF at once),
// with the server's side of it when it did.
func (r *limiterRig) dial(source string) (net.Conn, bool) {
	c, server := r.dialServer(source)
	return c, server != nil
}

func (r *limiterRig) dialServer(source string) (client, server net.Conn) {
	r.t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}}
	c, err := d.Dial("tcp", r.l.Addr().String())
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = c.Close() })
	select {
	case s := <-r.accepted:
		return c, s
	case <-time.After(2 * time.Second):
		return c, nil
	}
}

// cut reports whether the server closed c.
func cut(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := c.Read(make([]byte, 1))
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err)
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

// TestConnLimiterPerSource: one address holds at most perSource connections;
// the next is closed at once, others still get in, and a closed one gives
// its place back.
func TestConnLimiterPerSource(t *testing.T) {
	r := newLimiterRig(t, 3, 100)
	var held []net.Conn // the server's sides
	for i := range 3 {
		_, s := r.dialServer("127.0.0.2")
		if s == nil {
			t.Fatalf("connection %d of 127.0.0.2 refused under its cap", i+1)
		}
		held = append(held, s)
	}
	over, ok := r.dial("127.0.0.2")
	if ok || !cut(over) {
		t.Fatalf("a 4th connection of 127.0.0.2 kept (accepted %v): the cap is 3", ok)
	}
	if _, ok := r.dial("127.0.0.3"); !ok {
		t.Fatal("another address refused while 127.0.0.2 is at its cap")
	}
	// The server closes one of 127.0.0.2's: its place is free again.
	held[0].Close()
	if err := waitOpen(r.l, 3); err != nil { // two of 127.0.0.2, one of 127.0.0.3
		t.Fatal(err)
	}
	if _, ok := r.dial("127.0.0.2"); !ok {
		t.Fatal("127.0.0.2 refused after one of its connections closed")
	}
}

// waitOpen waits until the listener counts n open connections.
func waitOpen(l *connLimiter, n int) error {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		open := l.open
		l.mu.Unlock()
		if open == n {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("open connections never reached the expected count")
}

// TestConnLimiterFullEvictsTheLargest: with every connection taken, a caller
// holding fewer than the largest holder gets in, and the largest holder's
// oldest connection is closed; a caller holding about as many is refused.
// However many connections callers open, the API server's address gets in.
func TestConnLimiterFullEvictsTheLargest(t *testing.T) {
	r := newLimiterRig(t, 10, 4)
	var flood []net.Conn
	for i := range 4 {
		c, ok := r.dial("127.0.0.2")
		if !ok {
			t.Fatalf("connection %d refused under the caps", i+1)
		}
		flood = append(flood, c)
	}
	if _, ok := r.dial("127.0.0.1"); !ok {
		t.Fatal("the API server's address refused while another holds every connection")
	}
	if !cut(flood[0]) {
		t.Error("the flood's oldest connection was not closed to let the API server in")
	}
	for _, c := range flood[1:] {
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); !isTimeout(err) {
			t.Errorf("a newer flood connection was closed too: %v", err)
		}
	}
	// 127.0.0.2 now holds 3, 127.0.0.1 one: a new one of 127.0.0.2 waits.
	if c, ok := r.dial("127.0.0.2"); ok || !cut(c) {
		t.Errorf("the largest holder got another connection while all are taken (accepted %v)", ok)
	}
	if got := waitOpen(r.l, 4); got != nil {
		t.Errorf("open connections: %v, want the total of 4", got)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
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

// hangGuard bounds a wait for something that must happen; reaching it is a
// failure, never a verdict.
const hangGuard = time.Minute

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

// client is a dialled connection whose closing by the server is seen:
// closed is closed once a read fails.
type client struct {
	net.Conn
	closed chan struct{}
}

// dial connects from source and returns the connection and, when the
// listener let it in, the server's side of it. Each connection ends one of
// two ways, both waited for: the listener hands it on, or closes it.
func (r *limiterRig) dial(source string) (*client, net.Conn) {
	r.t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}}
	c, err := d.Dial("tcp", r.l.Addr().String())
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = c.Close() })
	cl := &client{Conn: c, closed: make(chan struct{})}
	go func() { _, _ = c.Read(make([]byte, 1)); close(cl.closed) }()
	select {
	case s := <-r.accepted:
		return cl, s
	case <-cl.closed:
		return cl, nil
	case <-time.After(hangGuard):
		r.t.Fatalf("a connection from %s was neither handed on nor closed", source)
		return nil, nil
	}
}

// waitCut waits until the server closes c.
func waitCut(t *testing.T, c *client) {
	t.Helper()
	select {
	case <-c.closed:
	case <-time.After(hangGuard):
		t.Fatal("the connection was never closed")
	}
}

// held reports whether the listener still counts server connection s.
func (r *limiterRig) held(s net.Conn) bool {
	lc := s.(*limitedConn)
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	return !lc.dropped
}

// open is how many connections the listener counts.
func (r *limiterRig) open() int {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	return r.l.open
}

// TestConnLimiterPerSource: one address holds at most perSource connections;
// the next is closed at once, others still get in, and a closed one gives
// its place back.
func TestConnLimiterPerSource(t *testing.T) {
	r := newLimiterRig(t, 3, 100)
	var held []net.Conn // the server's sides
	for i := range 3 {
		_, s := r.dial("127.0.0.2")
		if s == nil {
			t.Fatalf("connection %d of 127.0.0.2 refused under its cap", i+1)
		}
		held = append(held, s)
	}
	if _, s := r.dial("127.0.0.2"); s != nil {
		t.Fatal("a 4th connection of 127.0.0.2 let in: the cap is 3")
	}
	if _, s := r.dial("127.0.0.3"); s == nil {
		t.Fatal("another address refused while 127.0.0.2 is at its cap")
	}
	// The server closes one of 127.0.0.2's: its place is free again.
	held[0].Close()
	if n := r.open(); n != 3 { // two of 127.0.0.2, one of 127.0.0.3
		t.Fatalf("%d connections counted after one closed, want 3", n)
	}
	if _, s := r.dial("127.0.0.2"); s == nil {
		t.Fatal("127.0.0.2 refused after one of its connections closed")
	}
}

// TestConnLimiterFullEvictsTheLargest: with every connection taken, a caller
// holding fewer than the largest holder gets in, and the largest holder's
// oldest connection is closed; a caller holding about as many is refused.
// However many connections callers open, the API server's address gets in.
func TestConnLimiterFullEvictsTheLargest(t *testing.T) {
	r := newLimiterRig(t, 10, 4)
	var flood []*client
	var floodServer []net.Conn
	for i := range 4 {
		c, s := r.dial("127.0.0.2")
		if s == nil {
			t.Fatalf("connection %d refused under the caps", i+1)
		}
		flood, floodServer = append(flood, c), append(floodServer, s)
	}
	if _, s := r.dial("127.0.0.1"); s == nil {
		t.Fatal("the API server's address refused while another holds every connection")
	}
	waitCut(t, flood[0]) // the flood's oldest, closed to let the API server in
	for i, s := range floodServer[1:] {
		if !r.held(s) {
			t.Errorf("flood connection %d was let go too: only the oldest goes", i+2)
		}
	}
	// 127.0.0.2 now holds 3, 127.0.0.1 one: a new one of 127.0.0.2 waits.
	if _, s := r.dial("127.0.0.2"); s != nil {
		t.Error("the largest holder got another connection while all are taken")
	}
	if n := r.open(); n != 4 {
		t.Errorf("%d connections counted, want the total of 4", n)
	}
}

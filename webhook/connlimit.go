// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"net"
	"net/netip"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Default connection caps of the webhook's listener. A mgr write is one
// admission call or two; 128 concurrent calls from one API server is far past
// what mgr Deployments ask, and 1024 open connections stay within the
// Deployment's memory limit (test/integration/bounded measures it).
const (
	DefaultMaxConnsPerSource = 128
	DefaultMaxConns          = 1024
)

// Reasons a connection is cut by the listener (mgr_webhook_connections_cut_total).
const (
	CutPerSource = "per-source" // past the cap of its source address
	CutFull      = "full"       // all taken, and its source holds about as many as any
	CutEvicted   = "evicted"    // the oldest of the largest holder, for a smaller one
)

var connectionsCut = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mgr_webhook_connections_cut_total",
	Help: "Connections the webhook's listener closed: past the cap of their source address (per-source), new while all were taken by sources holding as many (full), or the oldest of the largest holder, to let a smaller one in (evicted).",
}, []string{"reason"})

func init() {
	metrics.Registry.MustRegister(connectionsCut)
	for _, reason := range []string{CutPerSource, CutFull, CutEvicted} {
		connectionsCut.WithLabelValues(reason)
	}
}

// connLimiter caps the connections a listener holds open: perSource from one
// address, total in all. It never blocks Accept (as netutil.LimitListener
// does, which would stall the API server behind whoever filled the cap): a
// connection past its source's cap is closed at once, and when all total are
// taken a new one from a source holding fewer than the largest holder is let
// in by closing that holder's oldest connection. So no caller, nor a crowd of
// them, can keep a source with few connections out — the API server calls
// from its own address, with few.
type connLimiter struct {
	net.Listener
	perSource, total int

	mu       sync.Mutex
	bySource map[netip.Addr][]*limitedConn // oldest first
	open     int
}

func newConnLimiter(l net.Listener, perSource, total int) *connLimiter {
	return &connLimiter{Listener: l, perSource: perSource, total: total, bySource: map[netip.Addr][]*limitedConn{}}
}

// Accept returns the next connection the caps let in.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := l.admit(c); lc != nil {
			return lc, nil
		}
	}
}

// admit registers c, or closes it and returns nil.
func (l *connLimiter) admit(c net.Conn) *limitedConn {
	src := sourceOf(c.RemoteAddr())
	l.mu.Lock()
	if len(l.bySource[src]) >= l.perSource {
		l.mu.Unlock()
		connectionsCut.WithLabelValues(CutPerSource).Inc()
		_ = c.Close()
		return nil
	}
	var evict *limitedConn
	if l.open >= l.total {
		largest := l.largest()
		if len(l.bySource[largest]) <= len(l.bySource[src])+1 {
			// The new caller already holds about as many as anyone: it waits.
			l.mu.Unlock()
			connectionsCut.WithLabelValues(CutFull).Inc()
			_ = c.Close()
			return nil
		}
		evict = l.bySource[largest][0]
		l.drop(evict)
	}
	lc := &limitedConn{Conn: c, l: l, src: src}
	l.bySource[src] = append(l.bySource[src], lc)
	l.open++
	l.mu.Unlock()
	if evict != nil {
		connectionsCut.WithLabelValues(CutEvicted).Inc()
		_ = evict.Close()
	}
	return lc
}

// largest is the source holding the most connections. Called with mu held.
func (l *connLimiter) largest() netip.Addr {
	var best netip.Addr
	for src, cs := range l.bySource {
		if len(cs) > len(l.bySource[best]) {
			best = src
		}
	}
	return best
}

// drop forgets c, once. Called with mu held.
func (l *connLimiter) drop(c *limitedConn) {
	if c.dropped {
		return
	}
	c.dropped = true
	cs := l.bySource[c.src]
	for i := range cs {
		if cs[i] == c {
			cs = append(cs[:i], cs[i+1:]...)
			break
		}
	}
	if len(cs) == 0 {
		delete(l.bySource, c.src)
	} else {
		l.bySource[c.src] = cs
	}
	l.open--
}

// sourceOf is the address a connection comes from, without its port (an
// IPv4-mapped IPv6 address as IPv4).
func sourceOf(a net.Addr) netip.Addr {
	if tcp, ok := a.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(tcp.IP); ok {
			return ip.Unmap()
		}
	}
	return netip.Addr{}
}

// limitedConn gives its place back when closed.
type limitedConn struct {
	net.Conn
	l       *connLimiter
	src     netip.Addr
	dropped bool // guarded by l.mu
}

func (c *limitedConn) Close() error {
	c.l.mu.Lock()
	c.l.drop(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

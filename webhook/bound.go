// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"fmt"
	"net/http"
	"time"
)

// MaxRequestBytes is the largest AdmissionReview read: the API server's own
// limit on a request body (3 MiB). A mgr Deployment is some tens of KiB; a
// review over this is no write the API server would have sent, and is refused
// before it is read.
const MaxRequestBytes = 3 << 20

// Bound keeps the webhook serving the API server while anyone who can reach
// its port sends large, slow or many requests: each request is read within
// ReadTimeout (the API server gives up after the configuration's
// timeoutSeconds anyway), its body is cut at MaxRequestBytes, and requests in
// flight are bounded in two pools: up to Small requests that declare at most
// SmallBytes (every real admission of a mgr), and up to Large others (large,
// or of unknown length, each up to MaxRequestBytes). A request finding its
// pool full is answered 429 at once, so large or slow requests can neither
// exhaust the memory (Small*SmallBytes + Large*MaxRequestBytes bounds what
// bodies hold) nor hold up the small ones.
type Bound struct {
	ReadTimeout  time.Duration
	SmallBytes   int64
	small, large chan struct{}
}

// NewBound is a Bound with the defaults of cmd/mgr-webhook: 10 s to read, 64
// small requests of up to 256 KiB and 4 large ones (28 MiB of bodies at most;
// test/bounded measured a peak of 93 MiB under 20 slow 3 MiB senders, against
// the Deployment's 128 MiB limit, and 120 MiB with 8 large).
func NewBound() *Bound {
	return &Bound{ReadTimeout: 10 * time.Second, SmallBytes: 256 << 10, small: make(chan struct{}, 64), large: make(chan struct{}, 4)}
}

// Wrap bounds h, the handler of webhook name (for the metrics).
func (b *Bound) Wrap(name string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxRequestBytes {
			count(name, OutcomeErrored, DenialTooLarge)
			http.Error(w, fmt.Sprintf("request body of %d bytes is over the limit of %d", r.ContentLength, MaxRequestBytes), http.StatusRequestEntityTooLarge)
			return
		}
		pool := b.large
		if r.ContentLength >= 0 && r.ContentLength <= b.SmallBytes {
			pool = b.small
		}
		select {
		case pool <- struct{}{}:
			defer func() { <-pool }()
		default:
			count(name, OutcomeErrored, DenialOverloaded)
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many requests in flight", http.StatusTooManyRequests)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(b.ReadTimeout)) // not every ResponseWriter has a connection (tests)
		r.Body = http.MaxBytesReader(w, r.Body, MaxRequestBytes)
		h.ServeHTTP(w, r)
	})
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"golang.org/x/sync/semaphore"
)

// MaxRequestBytes is the largest AdmissionReview read: the API server's own
// limit on a request body (3 MiB). A mgr Deployment is some tens of KiB; a
// review over this is no write the API server would have sent, and is refused
// before it is read.
const MaxRequestBytes = 3 << 20

// Bound keeps the webhook serving the API server while anyone who can reach
// its port sends large, slow, idle or many requests. A request declared over
// MaxRequestBytes is refused unread. A small one (declared at most
// SmallBytes: every real admission of a mgr) is read in full before it may
// take a slot, within BodyTimeout (the API server sends a review's body with
// its headers), and the bytes of small bodies being read count against
// SmallBudget as they arrive: a connection that sends headers and no body,
// or a body a byte at a time, holds neither a slot nor memory, and is cut at
// BodyTimeout. Then up to Small requests are handled at once. Any other
// request (large, or of unknown length, each up to MaxRequestBytes, read
// within ReadTimeout) takes one of Large slots before it is read. A request
// that finds its pool or the budget full is answered 429 at once, so large or
// slow requests can neither exhaust the memory (SmallBudget +
// Large*MaxRequestBytes bounds what bodies hold) nor hold up the small ones.
type Bound struct {
	ReadTimeout time.Duration
	BodyTimeout time.Duration
	SmallBytes  int64
	// budget is SmallBudget bytes of small bodies in flight.
	budget       *semaphore.Weighted
	small, large chan struct{}
}

// NewBound is a Bound with the defaults of cmd/mgr-webhook: 10 s to read a
// large request, 2 s for a small one's body, 64 small requests of up to
// 256 KiB handled at once with 16 MiB of small bodies in flight, and 4 large
// ones (28 MiB of bodies at most; test/integration/bounded measured a peak of 73-79 MiB
// RSS under 20 slow 3 MiB senders and 200 idle callers, against the
// Deployment's 128 MiB limit).
func NewBound() *Bound {
	return &Bound{ReadTimeout: 10 * time.Second, BodyTimeout: 2 * time.Second, SmallBytes: 256 << 10,
		budget: semaphore.NewWeighted(16 << 20), small: make(chan struct{}, 64), large: make(chan struct{}, 4)}
}

// errBudget: the small bodies in flight fill the budget.
var errBudget = errors.New("too many request bytes in flight")

// Wrap bounds h, the handler of webhook name (for the metrics).
func (b *Bound) Wrap(name string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxRequestBytes {
			count(name, OutcomeErrored, DenialTooLarge)
			http.Error(w, fmt.Sprintf("request body of %d bytes is over the limit of %d", r.ContentLength, MaxRequestBytes), http.StatusRequestEntityTooLarge)
			return
		}
		rc := http.NewResponseController(w)
		pool := b.large
		if r.ContentLength >= 0 && r.ContentLength <= b.SmallBytes {
			pool = b.small
			// Not every ResponseWriter has a connection (tests): then the
			// body is in memory already.
			_ = rc.SetReadDeadline(time.Now().Add(b.BodyTimeout))
			body, held, err := b.readSmall(r.Body, r.ContentLength)
			defer b.budget.Release(held)
			switch {
			case errors.Is(err, errBudget):
				overloaded(w, name)
				return
			case err != nil:
				count(name, OutcomeErrored, DenialUnread)
				http.Error(w, "reading the request body: "+err.Error(), http.StatusRequestTimeout)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		select {
		case pool <- struct{}{}:
			defer func() { <-pool }()
		default:
			overloaded(w, name)
			return
		}
		if pool == b.large {
			_ = rc.SetReadDeadline(time.Now().Add(b.ReadTimeout))
			r.Body = http.MaxBytesReader(w, r.Body, MaxRequestBytes)
		}
		h.ServeHTTP(w, r)
	})
}

// readSmall reads a body declared length bytes long (at most SmallBytes)
// into one buffer that grows as bytes arrive (never ahead of them: a caller
// that declares 256 KiB and sends nothing holds 32 KiB), charging the budget
// for each read; held is what it charged (release it when the request is
// done). A body shorter than declared is an error, as net/http makes it.
func (b *Bound) readSmall(body io.Reader, length int64) (data []byte, held int64, err error) {
	data = make([]byte, 0, min(length, 32<<10))
	for int64(len(data)) < length {
		if len(data) == cap(data) {
			data = slices.Grow(data, int(min(length, 2*int64(cap(data))))-len(data))
		}
		n, err := body.Read(data[len(data):min(int64(cap(data)), length)])
		if n > 0 {
			if !b.budget.TryAcquire(int64(n)) {
				return nil, held, errBudget
			}
			held += int64(n)
			data = data[:len(data)+n]
		}
		if err == io.EOF && int64(len(data)) < length {
			return nil, held, io.ErrUnexpectedEOF
		}
		if err != nil && err != io.EOF {
			return nil, held, err
		}
	}
	return data, held, nil
}

func overloaded(w http.ResponseWriter, name string) {
	count(name, OutcomeErrored, DenialOverloaded)
	w.Header().Set("Retry-After", "1")
	http.Error(w, "too many requests in flight", http.StatusTooManyRequests)
}

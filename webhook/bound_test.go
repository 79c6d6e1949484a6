// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"
)

// countingReader counts what the server read of a body.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestBound(t *testing.T) {
	b := &Bound{ReadTimeout: time.Second, BodyTimeout: time.Second, SmallBytes: 1024, budget: semaphore.NewWeighted(4096),
		small: make(chan struct{}, 2), large: make(chan struct{}, 1)}
	release := make(chan struct{})
	var entered sync.WaitGroup
	h := b.Wrap(mutateName, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.Header.Get("X-Hold") != "" {
			entered.Done()
			<-release
		}
		w.WriteHeader(http.StatusOK)
	}))
	serve := func(body io.Reader, length int64, hold bool) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, MutatePath, body)
		req.ContentLength = length
		if hold {
			req.Header.Set("X-Hold", "1")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}

	t.Run("declared over the limit: refused unread", func(t *testing.T) {
		body := &countingReader{r: bytes.NewReader(make([]byte, MaxRequestBytes+1))}
		if w := serve(body, MaxRequestBytes+1, false); w.Code != http.StatusRequestEntityTooLarge || body.n != 0 {
			t.Errorf("code %d after reading %d bytes; want 413 after none", w.Code, body.n)
		}
	})
	t.Run("declared at the limit: served", func(t *testing.T) {
		if w := serve(bytes.NewReader(make([]byte, MaxRequestBytes)), MaxRequestBytes, false); w.Code != http.StatusOK {
			t.Errorf("a request of exactly %d bytes: %d, want 200", MaxRequestBytes, w.Code)
		}
	})
	t.Run("undeclared over the limit: cut at the limit", func(t *testing.T) {
		body := &countingReader{r: bytes.NewReader(make([]byte, 2*MaxRequestBytes))}
		if w := serve(body, -1, false); w.Code != http.StatusBadRequest || body.n > MaxRequestBytes+64<<10 {
			t.Errorf("code %d after reading %d bytes; want 400 after at most the limit", w.Code, body.n)
		}
	})
	t.Run("a full pool answers 429 at once; the other pool still serves", func(t *testing.T) {
		entered.Add(1)
		done := make(chan int)
		go func() { done <- serve(strings.NewReader(strings.Repeat("x", 4096)), 4096, true).Code }()
		entered.Wait() // the one large slot is taken
		start := time.Now()
		if w := serve(strings.NewReader(strings.Repeat("x", 4096)), 4096, false); w.Code != http.StatusTooManyRequests || time.Since(start) > 500*time.Millisecond {
			t.Errorf("a second large request: %d after %s; want 429 at once", w.Code, time.Since(start))
		}
		if w := serve(strings.NewReader("{}"), 2, false); w.Code != http.StatusOK {
			t.Errorf("a small request beside a full large pool: %d", w.Code)
		}
		if w := serve(strings.NewReader("xx"), -1, false); w.Code != http.StatusTooManyRequests {
			t.Errorf("a request of unknown length counts as large: %d", w.Code)
		}
		// The small pool's bound on both sides, and an empty body.
		for length, want := range map[int64]int{0: http.StatusOK, b.SmallBytes: http.StatusOK, b.SmallBytes + 1: http.StatusTooManyRequests} {
			if w := serve(strings.NewReader(strings.Repeat("x", int(length))), length, false); w.Code != want {
				t.Errorf("a request of %d bytes beside a full large pool (small up to %d): %d, want %d", length, b.SmallBytes, w.Code, want)
			}
		}
		close(release)
		if code := <-done; code != http.StatusOK {
			t.Errorf("the held request: %d", code)
		}
		if w := serve(strings.NewReader(strings.Repeat("x", 4096)), 4096, false); w.Code != http.StatusOK {
			t.Errorf("the large slot was not given back: %d", w.Code)
		}
	})
}

// TestBoundSmallBodies: a small request's body is read, within the budget of
// bytes in flight and before a slot is taken, so a caller that sends headers
// and no body holds no slot, and small bodies never hold more than the
// budget.
func TestBoundSmallBodies(t *testing.T) {
	b := &Bound{ReadTimeout: time.Second, BodyTimeout: time.Second, SmallBytes: 1024, budget: semaphore.NewWeighted(1500),
		small: make(chan struct{}, 1), large: make(chan struct{}, 1)}
	var handled sync.WaitGroup
	h := b.Wrap(mutateName, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Read", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		handled.Done()
	}))
	serve := func(body io.Reader, length int64) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, MutatePath, body)
		req.ContentLength = length
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	t.Run("the handler gets the whole body", func(t *testing.T) {
		handled.Add(1)
		if w := serve(strings.NewReader(strings.Repeat("x", 1024)), 1024); w.Code != http.StatusOK || w.Header().Get("X-Read") != "1024" {
			t.Errorf("code %d, read %s; want 200 with 1024 bytes", w.Code, w.Header().Get("X-Read"))
		}
	})
	t.Run("a body shorter than declared is refused unhandled", func(t *testing.T) {
		if w := serve(strings.NewReader("{}"), 10); w.Code != http.StatusRequestTimeout {
			t.Errorf("code %d, want 408", w.Code)
		}
	})
	t.Run("a body still being sent holds no slot", func(t *testing.T) {
		pr, pw := io.Pipe()
		defer pw.Close()
		stalled := make(chan int)
		go func() { stalled <- serve(pr, 100).Code }()
		if _, err := pw.Write([]byte("{")); err != nil { // one byte, then nothing
			t.Fatal(err)
		}
		handled.Add(1)
		if w := serve(strings.NewReader("{}"), 2); w.Code != http.StatusOK {
			t.Errorf("a small request beside a stalled one (one slot): %d, want 200", w.Code)
		}
		pw.CloseWithError(io.ErrClosedPipe)
		if code := <-stalled; code != http.StatusRequestTimeout {
			t.Errorf("the stalled request: %d, want 408", code)
		}
	})
	t.Run("small bodies in flight past the budget: 429", func(t *testing.T) {
		pr, pw := io.Pipe()
		stalled := make(chan int)
		go func() { stalled <- serve(pr, 1024).Code }()
		if _, err := pw.Write(make([]byte, 1000)); err != nil { // 1000 of the budget's 1500 held
			t.Fatal(err)
		}
		for b.budget.TryAcquire(501) { // until the reader has charged them
			b.budget.Release(501)
			time.Sleep(time.Millisecond)
		}
		if w := serve(strings.NewReader(strings.Repeat("x", 600)), 600); w.Code != http.StatusTooManyRequests {
			t.Errorf("600 bytes beside 1000 in flight (budget 1500): %d, want 429", w.Code)
		}
		handled.Add(1)
		if w := serve(strings.NewReader(strings.Repeat("x", 400)), 400); w.Code != http.StatusOK {
			t.Errorf("400 bytes beside 1000 in flight (budget 1500): %d, want 200", w.Code)
		}
		pw.CloseWithError(io.ErrClosedPipe)
		<-stalled
		handled.Add(1)
		if w := serve(strings.NewReader(strings.Repeat("x", 1024)), 1024); w.Code != http.StatusOK {
			t.Errorf("the budget was not given back: %d", w.Code)
		}
	})
}

// BenchmarkBound: what Bound adds to a review of the minimal mgr's size
// (40 KiB), against the same handler unwrapped; the handler reads the body,
// as admission.Webhook does.
func BenchmarkBound(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 40<<10)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			b.Fatal(err)
		}
	})
	for name, handler := range map[string]http.Handler{"bare": h, "bounded": NewBound().Wrap(mutateName, h)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, MutatePath, bytes.NewReader(body))
				handler.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}

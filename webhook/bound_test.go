// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
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
	b := &Bound{ReadTimeout: time.Second, SmallBytes: 1024, small: make(chan struct{}, 2), large: make(chan struct{}, 1)}
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

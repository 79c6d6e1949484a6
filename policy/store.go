// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package policy keeps the policy in force in a running webhook or
// controller: the MgrPolicy it watches (Watcher), or a file's or the
// built-in one (Static), swapped whole on a change (Store).
package policy

import (
	"os"
	"sync"
	"sync/atomic"

	"github.com/rook-mgr/mgr-webhook/mutate"
)

// InForce is the policy a replica enforces and where it came from.
type InForce struct {
	Policy *mutate.Policy
	// Hash is Policy.Hash().
	Hash string
	// Source says where it came from: "MgrPolicy default", a file's path,
	// or "built-in".
	Source string
	// Generation is the MgrPolicy's metadata.generation; 0 for a file.
	Generation int64
}

// Store holds the policy in force. Readers take it once per request, so a
// request is judged by one policy even while it changes.
type Store struct {
	cur  atomic.Pointer[InForce]
	mu   sync.Mutex
	subs []chan struct{}
}

// NewStore starts with p (a file's, or the built-in one), named source.
func NewStore(p *mutate.Policy, source string) *Store {
	s := &Store{}
	s.cur.Store(&InForce{Policy: p, Hash: p.Hash(), Source: source})
	return s
}

// Static is a Store that never changes (tests, file mode).
func Static(p *mutate.Policy) *Store { return NewStore(p, "static") }

// Current is the policy in force; a nil Store's is the built-in policy.
func (s *Store) Current() *mutate.Policy {
	if s == nil {
		return mutate.DefaultPolicy()
	}
	return s.cur.Load().Policy
}

// InForce is the policy in force with where it came from.
func (s *Store) InForce() InForce { return *s.cur.Load() }

// Subscribe returns a channel that receives after each change of the policy
// in force (coalesced: one pending signal at most), so a controller can
// judge its objects again. Each subscriber has its own.
func (s *Store) Subscribe() <-chan struct{} {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs = append(s.subs, ch)
	return ch
}

// set puts in in force; false when it equals the one in force already.
func (s *Store) set(in InForce) bool {
	old := s.cur.Swap(&in)
	if old.Hash == in.Hash {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	return true
}

// FromFile is the Store a binary starts with: the policy file at path
// (checked strictly, mutate.ParsePolicy), or the built-in policy when path
// is empty.
func FromFile(path string) (*Store, error) {
	if path == "" {
		return NewStore(mutate.DefaultPolicy(), "built-in"), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := mutate.ParsePolicy(data)
	if err != nil {
		return nil, err
	}
	return NewStore(p, "file "+path), nil
}

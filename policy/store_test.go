// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package policy

import (
	"testing"

	"github.com/rook-mgr/mgr-webhook/mutate"
)

// TestStoreSignalsOnlyChanges: a controller judges its objects again when
// the policy in force changes, not when the same policy is read again, and
// signals pile up into one.
func TestStoreSignalsOnlyChanges(t *testing.T) {
	s := NewStore(mutate.DefaultPolicy(), "built-in")
	changed, other := s.Subscribe(), s.Subscribe()
	same := mutate.DefaultPolicy()
	if s.set(InForce{Policy: same, Hash: same.Hash(), Source: "MgrPolicy default", Generation: 1}) {
		t.Error("the same policy from another source counts as a change")
	}
	if got := s.InForce(); got.Source != "MgrPolicy default" || got.Generation != 1 {
		t.Errorf("in force: %+v, want the MgrPolicy's generation 1", got)
	}
	select {
	case <-changed:
		t.Fatal("signalled without a change")
	default:
	}
	for _, min := range []string{"17.0.0", "18.0.0"} {
		p := mutate.DefaultPolicy()
		p.Images.MinimumCephVersion = min
		if !s.set(InForce{Policy: p, Hash: p.Hash()}) {
			t.Fatalf("minimum %s not a change", min)
		}
	}
	<-changed
	select {
	case <-changed:
		t.Fatal("two changes, two signals: want one pending")
	default:
	}
	select {
	case <-other:
	default:
		t.Fatal("the second subscriber was not signalled")
	}
	if s.Current().Images.MinimumCephVersion != "18.0.0" {
		t.Errorf("in force: minimum %s", s.Current().Images.MinimumCephVersion)
	}
}

// TestNilStoreIsBuiltIn: a component given no Store enforces the built-in
// policy, the one FromFile("") holds.
func TestNilStoreIsBuiltIn(t *testing.T) {
	var none *Store
	builtIn, err := FromFile("")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := none.Current().Hash(), builtIn.Current().Hash(); got != want {
		t.Errorf("a nil Store's policy hashes %s, the built-in one %s", got, want)
	}
}

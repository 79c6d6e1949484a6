// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package await is the suites' one way to wait for a condition: poll it
// until it holds, or fail the test saying what did not happen in time.
package await

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// interval is how often a condition is asked again.
const interval = 50 * time.Millisecond

// For waits up to timeout for cond to hold, and fails t with what when it
// does not.
func For(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	ForErr(t, timeout, what, func() (bool, error) { return cond(), nil })
}

// ForErr is For with a condition that also says why it does not hold yet:
// the last such error is in the failure.
func ForErr(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	if err := wait.PollUntilContextTimeout(t.Context(), interval, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	}); err != nil {
		if last != nil {
			t.Fatalf("%s: not within %s (last: %v)", what, timeout, last)
		}
		t.Fatalf("%s: not within %s", what, timeout)
	}
}

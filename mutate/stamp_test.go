// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// TestStamp: a stamp reads back as written, writing it again changes
// nothing, and a forged or broken one reads as none.
func TestStamp(t *testing.T) {
	d := &appsv1.Deployment{}
	s := Stamp{Version: "v0.2.0", Policy: DefaultPolicy().Hash()}
	if !StampInPlace(d, s) || StampInPlace(d, s) {
		t.Fatal("the first stamp must change the Deployment, the same one again must not")
	}
	if got, ok := StampOf(d); !ok || got != s {
		t.Fatalf("read back %+v %v, wrote %+v", got, ok, s)
	}
	if !StampInPlace(d, Stamp{Version: "v0.2.0", Policy: "other"}) {
		t.Fatal("another policy's stamp did not change the Deployment")
	}
	for _, bad := range []string{"", "{", `{"version":"v1"}`} {
		d.Annotations[contract.AnnotationCompletedBy] = bad
		if _, ok := StampOf(d); ok {
			t.Errorf("stamp %q read as one", bad)
		}
	}
}

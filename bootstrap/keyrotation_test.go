// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// TestNextGeneration: the annotation always changes (a template carrying
// the generation already gets the next), and a number an editor wrote there
// never raises it.
func TestNextGeneration(t *testing.T) {
	for ann, want := range map[string]int64{"": 2, "1": 2, "2": 3, "3": 2, "9999999999": 2, "x": 2} {
		d := &appsv1.Deployment{}
		if ann != "" {
			d.Spec.Template.Annotations = map[string]string{contract.AnnotationCephxKeyGeneration: ann}
		}
		if got := nextGeneration(d, 2); got != want {
			t.Errorf("template annotation %q, generation 2: writes %d, want %d", ann, got, want)
		}
	}
}

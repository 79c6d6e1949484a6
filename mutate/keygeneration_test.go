// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// TestKeepKeyGeneration: an update that leaves the generation out keeps the
// stored one; a create, a stored mgr without one, and a value the writer
// sets are left as written.
func TestKeepKeyGeneration(t *testing.T) {
	withGen := func(v string) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.Spec.Template.Annotations = map[string]string{"other": "x"}
		if v != "" {
			d.Spec.Template.Annotations[contract.AnnotationCephxKeyGeneration] = v
		}
		return d
	}
	for name, tc := range map[string]struct {
		old, d  *appsv1.Deployment
		want    string
		changed Section
	}{
		"left out: kept":           {withGen("3"), withGen(""), "3", SectionTemplateMetadata},
		"left out, no annotations": {withGen("3"), &appsv1.Deployment{}, "3", SectionTemplateMetadata},
		"same":                     {withGen("3"), withGen("3"), "3", 0},
		"the writer's value":       {withGen("3"), withGen("7"), "7", 0},
		"create":                   {nil, withGen(""), "", 0},
		"none stored":              {withGen(""), withGen(""), "", 0},
	} {
		t.Run(name, func(t *testing.T) {
			got := KeepKeyGeneration(tc.old, tc.d)
			if v := tc.d.Spec.Template.Annotations[contract.AnnotationCephxKeyGeneration]; got != tc.changed || v != tc.want {
				t.Errorf("KeepKeyGeneration = %b, annotation %q; want %b, %q", got, v, tc.changed, tc.want)
			}
		})
	}
}

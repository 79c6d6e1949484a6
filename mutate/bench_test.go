// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

func benchInputs(b *testing.B) map[string]*appsv1.Deployment {
	minimal := loadDeployment(b, "../manifests/examples/minimal-mgr.yaml")
	res, errs := Complete(minimal, testClusters["rook-ceph"], DefaultPolicy())
	if len(errs) > 0 {
		b.Fatal(errs.ToAggregate())
	}
	return map[string]*appsv1.Deployment{"minimal": minimal, "complete": res.Deployment}
}

func BenchmarkComplete(b *testing.B) {
	p, info := DefaultPolicy(), testClusters["rook-ceph"]
	for name, d := range benchInputs(b) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Complete(d, info, p)
			}
		})
	}
}

func BenchmarkValidate(b *testing.B) {
	p, info := DefaultPolicy(), testClusters["rook-ceph"]
	d := benchInputs(b)["complete"]
	b.ReportAllocs()
	for b.Loop() {
		if errs := Validate(d, info, p); len(errs) > 0 {
			b.Fatal(errs.ToAggregate())
		}
	}
}

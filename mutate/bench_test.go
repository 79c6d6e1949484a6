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

// BenchmarkHoldRollout is what the rollout hold adds to an update of a
// complete mgr (a label change: the templates are compared), beside
// completing that mgr (BenchmarkComplete/complete), with and without a
// standby in the cluster's facts.
func BenchmarkHoldRollout(b *testing.B) {
	old := benchInputs(b)["complete"]
	d := old.DeepCopy()
	d.Labels["team"] = "storage"
	for name, facts := range map[string]*UpgradeFacts{"standby": {Standbys: 1}, "no-standby": {Standbys: 0}} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				HoldRollout(old, d, facts)
			}
		})
	}
}

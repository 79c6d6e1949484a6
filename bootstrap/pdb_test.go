// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rook-mgr/mgr-webhook/contract"
)

func TestDesiredPDB(t *testing.T) {
	want := desiredPDB("rook-ceph")
	if want.Name != "rook-ceph-mgr-pdb" || want.Spec.MaxUnavailable.IntValue() != 1 || want.Spec.MinAvailable != nil ||
		want.Spec.Selector.MatchLabels[contract.LabelApp] != contract.AppName || want.Spec.Selector.MatchLabels[contract.LabelRookCluster] != "rook-ceph" ||
		len(want.Spec.Selector.MatchLabels) != 2 {
		t.Errorf("PDB %s: %+v", want.Name, want.Spec)
	}
	if wantPDB(1) || !wantPDB(2) || wantPDB(0) {
		t.Error("a PDB is wanted for two or more mgrs only")
	}
	for name, tc := range map[string]struct {
		edit  func(*policyv1.PodDisruptionBudget)
		drift bool
	}{
		"as desired":       {func(*policyv1.PodDisruptionBudget) {}, false},
		"a user label":     {func(p *policyv1.PodDisruptionBudget) { p.Labels["team"] = "storage" }, false},
		"maxUnavailable 2": {func(p *policyv1.PodDisruptionBudget) { two := intstr.FromInt32(2); p.Spec.MaxUnavailable = &two }, true},
		"minAvailable instead": {func(p *policyv1.PodDisruptionBudget) {
			p.Spec.MaxUnavailable, p.Spec.MinAvailable = nil, p.Spec.MaxUnavailable
		}, true},
		"selector of one mgr": {func(p *policyv1.PodDisruptionBudget) { p.Spec.Selector.MatchLabels["mgr"] = "a" }, true},
		"a selector expression": {func(p *policyv1.PodDisruptionBudget) {
			p.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Exists"}}
		}, true},
	} {
		t.Run(name, func(t *testing.T) {
			have := want.DeepCopy()
			tc.edit(have)
			if got := pdbDrifted(have, want); got != tc.drift {
				t.Errorf("pdbDrifted = %v, want %v", got, tc.drift)
			}
		})
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

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

// TestEnsurePDB: the budget comes with the second mgr and goes with it, each
// time with an Event; one another object controls, or no mgr owns, stays.
func TestEnsurePDB(t *testing.T) {
	a, b := mgr("rook-ceph-mgr-a", "a", "uid-a"), mgr("rook-ceph-mgr-b", "b", "uid-b")
	ours := func(owners ...*appsv1.Deployment) *policyv1.PodDisruptionBudget {
		p := desiredPDB("rook-ceph")
		for _, o := range owners {
			p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: o.Name, UID: o.UID})
		}
		return p
	}
	rooks := ours()
	rookControlled(rooks)
	for name, tc := range map[string]struct {
		mgrs   []appsv1.Deployment
		have   *policyv1.PodDisruptionBudget
		exists bool
		event  string // "" for none
	}{
		"two mgrs: created":                 {[]appsv1.Deployment{*a, *b}, nil, true, "Normal PodDisruptionBudget PodDisruptionBudget rook-ceph-mgr-pdb created"},
		"one mgr left: removed":             {[]appsv1.Deployment{*a}, ours(a, b), false, "Normal PodDisruptionBudget PodDisruptionBudget rook-ceph-mgr-pdb removed"},
		"one mgr, none":                     {[]appsv1.Deployment{*a}, nil, false, ""},
		"one mgr, Rook's: left":             {[]appsv1.Deployment{*a}, rooks, true, ""},
		"one mgr, owned by no mgr: left":    {[]appsv1.Deployment{*a}, ours(), true, ""},
		"two mgrs, Rook's: left as it is":   {[]appsv1.Deployment{*a, *b}, rooks, true, ""},
		"two mgrs, ours already: no change": {[]appsv1.Deployment{*a, *b}, ours(a, b), true, ""},
	} {
		t.Run(name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme)
			if tc.have != nil {
				b = b.WithObjects(tc.have.DeepCopy())
			}
			cl := b.Build()
			rec := events.NewFakeRecorder(4)
			r := &Reconciler{Client: cl, APIReader: cl, Recorder: rec}
			d := &tc.mgrs[0]
			if err := r.ensurePDB(t.Context(), &scope{d: d, id: contract.MgrID(d), mgrs: tc.mgrs}); err != nil {
				t.Fatal(err)
			}
			got := &policyv1.PodDisruptionBudget{}
			err := cl.Get(t.Context(), client.ObjectKey{Namespace: "rook-ceph", Name: PDBName}, got)
			if exists := err == nil; exists != tc.exists {
				t.Fatalf("PDB exists %v (%v), want %v", exists, err, tc.exists)
			}
			if tc.have != nil && tc.exists && !equality.Semantic.DeepEqual(got.Spec, tc.have.Spec) {
				t.Errorf("PDB changed: %+v", got.Spec)
			}
			var event string
			if len(rec.Events) > 0 {
				event = <-rec.Events
			}
			if !strings.HasPrefix(event, tc.event) || (tc.event == "") != (event == "") {
				t.Errorf("event %q, want %q", event, tc.event)
			}
		})
	}
}

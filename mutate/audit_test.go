// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"slices"
	"testing"
)

// TestAudit: a mgr completed under the policy complies; a stricter rule is a
// violation of that rule (not drift); a policy that would complete it
// differently is drift (not a violation).
func TestAudit(t *testing.T) {
	d := completedMinimal(t) // Squid 19.2.3 under the built-in policy
	if f := Audit(d, DefaultPolicy()); !f.Compliant() {
		t.Fatalf("a mgr completed under the policy: %+v", f)
	}
	stricter := DefaultPolicy()
	stricter.Images.MinimumCephVersion = "20.0.0"
	f := Audit(d, stricter)
	if len(f.Violations) != 1 || Rule(f.Violations[0].Origin) != RuleMinimumCephVersion || f.Drift != 0 {
		t.Fatalf("minimum raised: violations %v (origins %v), drift %v", f.Violations, origins(f.Violations), SectionNames(f.Drift))
	}
	noProbe := DefaultPolicy()
	noProbe.LivenessProbe.Enabled = ptrTo(false)
	res, errs := Complete(loadDeployment(t, "../manifests/examples/minimal-mgr.yaml"), testClusters["rook-ceph"], noProbe)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	f = Audit(res.Deployment, DefaultPolicy())
	if len(f.Violations) != 0 || !slices.Equal(SectionNames(f.Drift), []string{"containers"}) {
		t.Fatalf("completed without the probe the policy now adds: violations %v, drift %v", f.Violations, SectionNames(f.Drift))
	}
}

// TestSectionNamesCoverEverySection: each section has a name, in order.
func TestSectionNamesCoverEverySection(t *testing.T) {
	all := SectionServiceAccount<<1 - 1
	if got := SectionNames(all); len(got) != 10 || got[0] != "labels" || got[9] != "service account" {
		t.Fatalf("names of every section: %v", got)
	}
}

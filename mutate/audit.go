// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Finding is what auditing a stored mgr Deployment against a policy finds.
type Finding struct {
	// Violations break rules whose action the policy's owner chooses
	// (Enforcement): the rules a site tightens over time. The rules that
	// keep a cluster whole were enforced when the mgr was written.
	Violations field.ErrorList
	// Drift are the sections completing the mgr again under the policy
	// would change: reported, never acted on.
	Drift Section
}

// Compliant reports whether the mgr breaks no rule and has not drifted.
func (f Finding) Compliant() bool { return len(f.Violations) == 0 && f.Drift == 0 }

// Audit judges a stored mgr Deployment against p, as a new write of it
// would be judged, without the cluster: the cluster's identity (its fsid)
// was checked when the mgr was written, so the mgr's own --fsid stands in.
func Audit(d *appsv1.Deployment, p *Policy) Finding {
	info := ClusterInfo{Namespace: d.Namespace, FSID: mgrFlag(d, "--fsid")}
	var f Finding
	for _, e := range Validate(d, info, p) {
		if e.Origin != "" {
			f.Violations = append(f.Violations, e)
		}
	}
	if res, errs := Complete(d, info, p); len(errs) == 0 {
		f.Drift = res.Changed
	}
	return f
}

// SectionNames names the sections of s, for a report.
func SectionNames(s Section) []string {
	names := []string{"labels", "annotations", "replicas", "selector", "strategy", "template metadata", "containers", "init containers", "volumes", "service account"}
	var out []string
	for i, n := range names {
		if s&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

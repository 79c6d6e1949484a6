// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"maps"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestEveryRuleNamesItsViolations: breaking each rule the policy's owner may
// set an action for yields one error tagged with that rule; the rules that
// keep a cluster whole carry none, so they always deny.
func TestEveryRuleNamesItsViolations(t *testing.T) {
	image := func(s string) func(d *appsv1.Deployment) {
		return func(d *appsv1.Deployment) {
			for _, cs := range [][]corev1.Container{d.Spec.Template.Spec.Containers, d.Spec.Template.Spec.InitContainers} {
				for i := range cs {
					cs[i].Image = s
				}
			}
		}
	}
	cases := map[string]struct {
		breakIt func(d *appsv1.Deployment)
		rule    Rule
	}{
		"a foreign repository": {image("registry.example.com/ceph:v18.2.4"), RuleAllowedRepositories},
		"an old release":       {image("quay.io/ceph/ceph:v15.2.17"), RuleMinimumCephVersion},
		"no tag":               {image("quay.io/ceph/ceph"), RuleMinimumCephVersion},
		"a tag of no release":  {image("quay.io/ceph/ceph:stable"), RuleMinimumCephVersion},
		"latest":               {image("quay.io/ceph/ceph:latest"), RuleAllowLatest},
		"privileged": {func(d *appsv1.Deployment) {
			mgrContainer(d).SecurityContext = &corev1.SecurityContext{Privileged: ptrTo(true)}
		}, RuleAllowPrivileged},
		"hostNetwork": {func(d *appsv1.Deployment) { d.Spec.Template.Spec.HostNetwork = true }, RuleAllowHostNetwork},
		"a hostPath outside the log directory": {func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Volumes = append(d.Spec.Template.Spec.Volumes, corev1.Volume{Name: "root",
				VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}, RuleDataDirHostPath},
		"two replicas (always denied)": {func(d *appsv1.Deployment) { d.Spec.Replicas = ptrTo[int32](2) }, ""},
		"another fsid (always denied)": {func(d *appsv1.Deployment) { setArg(mgrContainer(d), "--fsid", "x") }, ""},
	}
	tagged := map[Rule]bool{}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := completedMinimal(t)
			tc.breakIt(d)
			errs := Validate(d, testClusters["rook-ceph"], DefaultPolicy())
			if len(errs) != 1 || Rule(errs[0].Origin) != tc.rule {
				t.Fatalf("errors %v with origins %v, want one of rule %q", errs, origins(errs), tc.rule)
			}
			tagged[tc.rule] = true
		})
	}
	for _, r := range Rules {
		if !tagged[r] {
			t.Errorf("rule %s is never broken here", r)
		}
	}
}

func origins(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Origin)
	}
	return out
}

// TestJudge: each error goes where its rule's action sends it; errors of no
// rule, and rules the policy leaves unset, deny.
func TestJudge(t *testing.T) {
	p := DefaultPolicy()
	p.Enforcement = map[Rule]Action{RuleMinimumCephVersion: ActionWarn, RuleAllowLatest: ActionAudit, RuleAllowPrivileged: ActionDeny}
	errs := field.ErrorList{
		field.Invalid(field.NewPath("a"), "", "old").WithOrigin(string(RuleMinimumCephVersion)),
		field.Invalid(field.NewPath("b"), "", "latest").WithOrigin(string(RuleAllowLatest)),
		field.Forbidden(field.NewPath("c"), "privileged").WithOrigin(string(RuleAllowPrivileged)),
		field.Forbidden(field.NewPath("d"), "hostNetwork").WithOrigin(string(RuleAllowHostNetwork)),
		field.Invalid(field.NewPath("e"), 2, "replicas"),
	}
	v := p.Judge(errs)
	fields := func(l field.ErrorList) string {
		var s []string
		for _, e := range l {
			s = append(s, e.Field)
		}
		return strings.Join(s, ",")
	}
	if fields(v.Deny) != "c,d,e" || fields(v.Warn) != "a" || fields(v.Audit) != "b" {
		t.Fatalf("deny %s, warn %s, audit %s", fields(v.Deny), fields(v.Warn), fields(v.Audit))
	}
	if got := p.Describe(v.Warn[0]); !strings.Contains(got, "a: Invalid value") || !strings.HasSuffix(got, "(policy rule images.minimumCephVersion: Warn)") {
		t.Errorf("Describe = %q", got)
	}
}

// TestEnforcementValidated: a rule or action the policy does not know fails
// the policy, naming the entry.
func TestEnforcementValidated(t *testing.T) {
	for name, tc := range map[string]struct {
		e    map[Rule]Action
		want string
	}{
		"every rule, every action": {e: map[Rule]Action{RuleAllowedRepositories: ActionDeny, RuleMinimumCephVersion: ActionWarn, RuleAllowLatest: ActionAudit,
			RuleAllowPrivileged: ActionDeny, RuleAllowHostNetwork: ActionWarn, RuleDataDirHostPath: ActionAudit}},
		"a rule that always denies": {e: map[Rule]Action{"replicas": ActionWarn}, want: "spec.enforcement[replicas]: Unsupported value"},
		"an action of another case": {e: map[Rule]Action{RuleMinimumCephVersion: "warn"}, want: "spec.enforcement[images.minimumCephVersion]: Unsupported value"},
	} {
		t.Run(name, func(t *testing.T) {
			_, errs := PolicyFromSpec(&PolicySpec{Enforcement: maps.Clone(tc.e)}, field.NewPath("spec"))
			got := errs.ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Fatal(got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Fatalf("errors %v, want %q", got, tc.want)
			}
		})
	}
}

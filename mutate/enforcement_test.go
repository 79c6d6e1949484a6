// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
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
		if !tagged[r] && !slices.Contains(ReleaseRules, r) { // TestValidateRelease breaks those
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

// TestRuleNamesStatedOnce: Rules is the one list of the rules; the CRD's
// enforcement field (its description, its size limit, its CEL rule, from
// the markers on PolicySpec.Enforcement) and the in-API-server check
// (manifests/base/policy/check.yaml) name exactly those rules (the check:
// all but ReleaseRules).
func TestRuleNamesStatedOnce(t *testing.T) {
	want := make([]string, 0, len(Rules))
	for _, r := range Rules {
		want = append(want, string(r))
	}
	slices.Sort(want)
	quoted := regexp.MustCompile(`'([A-Za-z.]+)'`)
	names := func(s string) []string {
		var out []string
		for _, m := range quoted.FindAllStringSubmatch(s, -1) {
			out = append(out, m[1])
		}
		slices.Sort(out)
		return slices.Compact(out)
	}

	data, err := os.ReadFile("../manifests/base/policy/generated/mgr.ceph.rook.io_mgrpolicies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	var enf map[string]any
	var find func(v any)
	find = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if e, ok := v["enforcement"].(map[string]any); ok && e["maxProperties"] != nil {
				enf = e
				return
			}
			for _, c := range v {
				find(c)
			}
		case []any:
			for _, c := range v {
				find(c)
			}
		}
	}
	find(crd)
	if enf == nil {
		t.Fatal("no enforcement field with maxProperties in the CRD")
	}
	if got := enf["maxProperties"]; got != float64(len(Rules)) {
		t.Errorf("the CRD's enforcement takes %v rules, Rules has %d", got, len(Rules))
	}
	rules, _ := enf["x-kubernetes-validations"].([]any)
	if len(rules) != 1 {
		t.Fatalf("the CRD's enforcement has %d CEL rules, want 1", len(rules))
	}
	if got := names(rules[0].(map[string]any)["rule"].(string)); !slices.Equal(got, want) {
		t.Errorf("the CRD's CEL rule names %v, Rules %v", got, want)
	}
	desc, _ := enf["description"].(string)
	desc = strings.Join(strings.Fields(desc), " ")
	for _, r := range want {
		if !strings.Contains(desc, r) {
			t.Errorf("the CRD's description of enforcement does not name rule %s", r)
		}
	}

	check, err := os.ReadFile("../manifests/base/policy/check.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lookups := regexp.MustCompile(`variables\.enforcement\[\?'([A-Za-z.]+)'\]`)
	var got []string
	for _, m := range lookups.FindAllStringSubmatch(string(check), -1) {
		got = append(got, m[1])
	}
	slices.Sort(got)
	inCEL := slices.DeleteFunc(slices.Clone(want), func(r string) bool { return slices.Contains(ReleaseRules, Rule(r)) })
	if got = slices.Compact(got); !slices.Equal(got, inCEL) {
		t.Errorf("the in-API-server check reads the actions of %v, want %v (Rules less ReleaseRules)", got, inCEL)
	}
}

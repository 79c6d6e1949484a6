// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package audit

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	orv1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

// The audit report of a namespace: one OpenReports Report, whatever the
// number of mgrs (no per-admission or per-object reports), its results
// capped (the summary counts them all).
const (
	ReportName   = "mgr-policy"
	ReportSource = contract.WebhookName
	// RuleCompletion is the result rule of drift (completing again would
	// change the mgr); RulePolicy the one of a mgr that complies.
	RuleCompletion = "completion"
	RulePolicy     = "policy"
	// RuleModuleOptions is the result rule of a module option whose value
	// in Ceph is not the policy's.
	RuleModuleOptions = "moduleOptions"
)

// ShownValue is value as a Report or an Event may show the value of module
// option name: "<redacted>" for an option that may hold a credential.
func ShownValue(name, value string) string {
	if value != "" && contract.SensitiveModuleOption.MatchString(name) {
		return "<redacted>"
	}
	return value
}

// OptionDrift is an option of the policy's moduleOptions whose value in the
// cluster's configuration database (section mgr) is not the policy's.
type OptionDrift struct {
	// Name is the option (mgr/<module>/<option>); Want the policy's value;
	// Have Ceph's ("" when not set on section mgr).
	Name, Want, Have string
}

// audited is one mgr and what auditing it found.
type audited struct {
	d *appsv1.Deployment
	f mutate.Finding
}

// verdict is a mgr's result in one word (pass, fail, warn) and what makes it
// so, to tell when it changes (an Event).
func (a audited) verdict(p *mutate.Policy) (result orv1alpha1.Result, why string) {
	var rules []string
	result = "pass"
	for _, e := range a.f.Violations {
		rules = append(rules, e.Origin)
		if r, _ := resultOf(p, e); r == "fail" || result == "pass" {
			result = r
		}
	}
	if a.f.Drift != 0 {
		rules = append(rules, "drift: "+strings.Join(mutate.SectionNames(a.f.Drift), ", "))
		if result == "pass" {
			result = "warn"
		}
	}
	return result, strings.Join(rules, "; ")
}

// reportFor is namespace's Report from its mgrs' findings under policy p
// (named hash): a violation is fail (warn where the rule's action is Warn),
// drift is warn, a compliant mgr is pass. At most limit results, failures
// first; Hash names its content, so an unchanged report is not written.
func reportFor(namespace string, mgrs []audited, options []OptionDrift, p *mutate.Policy, hash string, limit int) (*orv1alpha1.Report, string) {
	var results []orv1alpha1.ReportResult
	cluster := []corev1.ObjectReference{{APIVersion: "mgr.ceph.rook.io/v1alpha1", Kind: "CephRelease", Name: namespace}}
	for _, o := range options {
		have := "is " + ShownValue(o.Name, o.Have)
		if o.Have == "" {
			have = "is not set"
		}
		results = append(results, orv1alpha1.ReportResult{Source: ReportSource, Policy: ReportName, Rule: RuleModuleOptions, Result: "warn",
			Subjects: cluster, Description: fmt.Sprintf("module option %s %s on section mgr, the policy says %s (changed by hand; the policy's restoreModuleOptions sets it back)", o.Name, have, ShownValue(o.Name, o.Want)),
			Properties: map[string]string{"policyHash": hash, "option": o.Name}})
	}
	for _, a := range mgrs {
		subject := []corev1.ObjectReference{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: a.d.Namespace, Name: a.d.Name, UID: a.d.UID}}
		props := map[string]string{"policyHash": hash}
		if s, ok := mutate.StampOf(a.d); ok {
			props["completedBy"] = s.String()
		}
		for _, e := range a.f.Violations {
			result, action := resultOf(p, e)
			results = append(results, orv1alpha1.ReportResult{Source: ReportSource, Policy: ReportName, Rule: e.Origin, Result: result,
				Subjects: subject, Description: e.Error(), Properties: withKey(props, "action", string(action))})
		}
		if a.f.Drift != 0 {
			results = append(results, orv1alpha1.ReportResult{Source: ReportSource, Policy: ReportName, Rule: RuleCompletion, Result: "warn",
				Subjects: subject, Description: "completing it again under the policy in force would change its " + strings.Join(mutate.SectionNames(a.f.Drift), ", ") + " (reported, not acted on)",
				Properties: props})
		}
		if a.f.Compliant() {
			results = append(results, orv1alpha1.ReportResult{Source: ReportSource, Policy: ReportName, Rule: RulePolicy, Result: "pass",
				Subjects: subject, Description: "complies with the policy in force", Properties: props})
		}
	}
	rank := map[orv1alpha1.Result]int{"fail": 0, "warn": 1, "pass": 2}
	slices.SortStableFunc(results, func(a, b orv1alpha1.ReportResult) int {
		return cmp.Or(cmp.Compare(rank[a.Result], rank[b.Result]), cmp.Compare(a.Subjects[0].Name, b.Subjects[0].Name), cmp.Compare(a.Rule, b.Rule))
	})
	r := &orv1alpha1.Report{
		TypeMeta:      metav1.TypeMeta{APIVersion: orv1alpha1.SchemeGroupVersion.String(), Kind: "Report"},
		ObjectMeta:    metav1.ObjectMeta{Name: ReportName, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/managed-by": contract.ControllerName}},
		Source:        ReportSource,
		Configuration: &orv1alpha1.ReportConfiguration{Limits: orv1alpha1.Limits{MaxResults: limit}},
	}
	for _, res := range results {
		switch res.Result {
		case "pass":
			r.Summary.Pass++
		case "fail":
			r.Summary.Fail++
		case "warn":
			r.Summary.Warn++
		}
	}
	if len(results) > limit {
		results = results[:limit]
	}
	r.Results = results
	data, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("a Report does not marshal: %v", err))
	}
	sum := sha256.Sum256(data)
	return r, hex.EncodeToString(sum[:8])
}

// resultOf is a violation's result under p, and the action that makes it
// so: fail where the rule denies or audits (as Kyverno's Audit mode reports
// fail), warn where it warns.
func resultOf(p *mutate.Policy, e *field.Error) (orv1alpha1.Result, mutate.Action) {
	action := cmp.Or(p.Enforcement[mutate.Rule(e.Origin)], mutate.ActionDeny)
	if action == mutate.ActionWarn {
		return "warn", action
	}
	return "fail", action
}

func withKey(m map[string]string, k, v string) map[string]string {
	out := maps.Clone(m)
	out[k] = v
	return out
}

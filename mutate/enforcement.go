// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The actions: Deny refuses the write; Warn admits it with a warning to its
// writer; Audit admits it silently, recorded in the request's audit
// annotations (and the audit report) only.
const (
	ActionDeny  Action = "Deny"
	ActionWarn  Action = "Warn"
	ActionAudit Action = "Audit"
)

// The rules of Enforcement, named after the policy field each enforces.
const (
	RuleAllowedRepositories Rule = "images.allowedRepositories"
	RuleMinimumCephVersion  Rule = "images.minimumCephVersion"
	RuleAllowLatest         Rule = "images.allowLatest"
	RuleAllowPrivileged     Rule = "allowPrivileged"
	RuleAllowHostNetwork    Rule = "allowHostNetwork"
	RuleDataDirHostPath     Rule = "dataDirHostPath"
)

// Rules are the rules Enforcement may name.
var Rules = []Rule{RuleAllowedRepositories, RuleMinimumCephVersion, RuleAllowLatest, RuleAllowPrivileged, RuleAllowHostNetwork, RuleDataDirHostPath}

// Verdict is a validation's errors split by what each one's rule does.
type Verdict struct {
	Deny, Warn, Audit field.ErrorList
}

// Judge splits errs by the action of each one's rule (its Origin): Deny
// unless the policy set the rule's action to Warn or Audit.
func (p *Policy) Judge(errs field.ErrorList) Verdict {
	var v Verdict
	for _, e := range errs {
		switch p.Enforcement[Rule(e.Origin)] {
		case ActionWarn:
			v.Warn = append(v.Warn, e)
		case ActionAudit:
			v.Audit = append(v.Audit, e)
		default:
			v.Deny = append(v.Deny, e)
		}
	}
	return v
}

// Describe is the one-line account of e under the policy's action for its
// rule, for a warning or an audit annotation.
func (p *Policy) Describe(e *field.Error) string {
	return fmt.Sprintf("%s (policy rule %s: %s)", e.Error(), e.Origin, p.Enforcement[Rule(e.Origin)])
}

func (p *Policy) validateEnforcement(root *field.Path) field.ErrorList {
	var errs field.ErrorList
	for rule, action := range p.Enforcement {
		fp := root.Child("enforcement").Key(string(rule))
		if !slices.Contains(Rules, rule) {
			errs = append(errs, field.NotSupported(fp, rule, Rules))
		}
		if action != ActionDeny && action != ActionWarn && action != ActionAudit {
			errs = append(errs, field.NotSupported(fp, action, []Action{ActionDeny, ActionWarn, ActionAudit}))
		}
	}
	return errs
}

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
	// RuleUpgradePath refuses a change of a mgr's Ceph release that Ceph's
	// upgrade path forbids (JudgeUpgrade); RuleUpgradeReadiness says what
	// makes an allowed one risky now, and warns unless the policy says
	// otherwise. Both follow images.upgradePath's exemptions.
	RuleUpgradePath      Rule = "images.upgradePath"
	RuleUpgradeReadiness Rule = "images.upgradeReadiness"
)

// Rules are the rules Enforcement may name.
var Rules = []Rule{RuleAllowedRepositories, RuleMinimumCephVersion, RuleAllowLatest, RuleAllowPrivileged, RuleAllowHostNetwork, RuleDataDirHostPath,
	RuleUpgradePath, RuleUpgradeReadiness}

// ReleaseRules are the rules of the release guard (ValidateRelease): the
// webhook judges them, by the cluster's CephRelease; the in-API-server
// check does not (CEL has no view of a Ceph cluster), and Validate of one
// object has no change to judge.
var ReleaseRules = []Rule{RuleUpgradePath, RuleUpgradeReadiness}

// defaultActions are the actions of the rules that do not deny unless the
// policy's Enforcement says so.
var defaultActions = map[Rule]Action{RuleUpgradeReadiness: ActionWarn}

// Action is what the policy does on a violation of rule.
func (p *Policy) Action(rule Rule) Action {
	if a, ok := p.Enforcement[rule]; ok {
		return a
	}
	if a, ok := defaultActions[rule]; ok {
		return a
	}
	return ActionDeny
}

// Verdict is a validation's errors split by what each one's rule does.
type Verdict struct {
	Deny, Warn, Audit field.ErrorList
}

// Judge splits errs by the action of each one's rule (its Origin; Action).
func (p *Policy) Judge(errs field.ErrorList) Verdict {
	var v Verdict
	for _, e := range errs {
		switch p.Action(Rule(e.Origin)) {
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
	return fmt.Sprintf("%s (policy rule %s: %s)", e.Error(), e.Origin, p.Action(Rule(e.Origin)))
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

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"slices"
	"strings"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// ModulesAnnotation returns the modules a Deployment's annotation
// mgr.ceph.rook.io/modules names (comma-separated, blanks dropped), and
// whether it carries the annotation at all ("" names no module).
func ModulesAnnotation(annotations map[string]string) ([]string, bool) {
	v, ok := annotations[contract.AnnotationModules]
	if !ok {
		return nil, false
	}
	var mods []string
	for _, m := range strings.Split(v, ",") {
		if m = strings.TrimSpace(m); m != "" {
			mods = append(mods, m)
		}
	}
	return mods, true
}

// ChosenModules judges the modules a Deployment's annotation names against
// the policy's moduleChoices: the modules are the whole Ceph cluster's, so a
// Deployment's editor may choose among what the policy's owner offers and no
// more. ok when the policy offers choices and every module named is one;
// outside lists the modules that are not.
func ChosenModules(mods, choices []string) (outside []string, ok bool) {
	for _, m := range mods {
		if !slices.Contains(choices, m) {
			outside = append(outside, m)
		}
	}
	return outside, len(choices) > 0 && len(outside) == 0
}

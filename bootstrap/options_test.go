// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"slices"
	"testing"

	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/policy"
)

// TestValuesInForce: what a flag set wins, even set empty; what none set
// follows the policy in force.
func TestValuesInForce(t *testing.T) {
	p := mutate.DefaultPolicy()
	p.Modules, p.ModuleChoices, p.AdoptExistingKeys = []string{"prometheus"}, []string{"influxdb2"}, []string{"legacy"}
	store := policy.Static(p)
	cases := map[string]struct {
		o                      Options
		modules, choices, keys []string
	}{
		"no policy: the options'":   {Options{Modules: []string{"dashboard"}}, []string{"dashboard"}, nil, nil},
		"no flags: the policy's":    {Options{Policy: store}, p.Modules, p.ModuleChoices, p.AdoptExistingKeys},
		"flags win":                 {Options{Policy: store, Modules: []string{"dashboard"}, AdoptExistingKeys: []string{"*"}}, []string{"dashboard"}, p.ModuleChoices, []string{"*"}},
		"a flag set empty wins too": {Options{Policy: store, ModuleChoices: []string{}}, p.Modules, []string{}, p.AdoptExistingKeys},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m, c, k := tc.o.InForce()
			if !slices.Equal(m, tc.modules) || !slices.Equal(c, tc.choices) || !slices.Equal(k, tc.keys) {
				t.Fatalf("inForce = %v %v %v, want %v %v %v", m, c, k, tc.modules, tc.choices, tc.keys)
			}
		})
	}
	if !(Options{Policy: store}).adopts("legacy") || (Options{Policy: store}).adopts("rook-ceph") {
		t.Error("adopts does not follow the policy's adoptExistingKeys")
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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

// TestDefaultOptionsAreTheREADMEs: the defaults docs/controller.md's mgr-bootstrap
// flags list promises are the controller's (cmd/mgr-bootstrap takes its
// flag defaults from DefaultOptions); the two the page does not list are
// Rook's (ExecuteCephCommandWithRetry's interval, its wait for a mgr).
func TestDefaultOptionsAreTheREADMEs(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "docs", "controller.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "mgr-bootstrap [flags]\n")
	if !ok {
		t.Fatal("docs/controller.md lists no mgr-bootstrap flags")
	}
	block, _, _ = strings.Cut(block, "```")
	documented := map[string]string{}
	for _, line := range strings.Split(block, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && strings.HasPrefix(f[0], "--") {
			documented[f[0]] = f[1]
		}
	}
	o := DefaultOptions()
	for flag, got := range map[string]string{
		"--module-timeout":    o.ModuleTimeout.String(),
		"--finalizer-timeout": o.FinalizerTimeout.String(),
		"--ceph-retry-max":    o.CephRetryMax.String(),
		"--mgr-role-interval": o.RoleInterval.String(),
		"--mgr-role-workers":  strconv.Itoa(o.RoleWorkers),
		"--audit-interval":    o.AuditInterval.String(),
	} {
		want, ok := documented[flag]
		if !ok {
			t.Errorf("docs/controller.md does not list %s", flag)
			continue
		}
		// The README writes 3m and 1m; Duration.String writes 3m0s.
		if d, err := time.ParseDuration(want); err == nil {
			want = d.String()
		}
		if got != want {
			t.Errorf("%s defaults to %s, docs/controller.md says %s", flag, got, want)
		}
	}
	if o.RetryInterval != 2*time.Second || o.WaitForMgr != 5*time.Second {
		t.Errorf("RetryInterval %s, WaitForMgr %s: Rook's are 2s and 5s", o.RetryInterval, o.WaitForMgr)
	}
}

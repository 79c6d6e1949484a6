// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package golden

import (
	"os"
	"testing"
)

// TestCasesOfTheRepository: the corpus holds the testdata inputs and the
// shipped examples, each with a golden file that exists, and no golden or
// policy file is taken for an input.
func TestCasesOfTheRepository(t *testing.T) {
	cases, err := Cases("../../..")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Case{}
	for _, c := range cases {
		byName[c.Name] = c
		if _, err := os.Stat(c.Golden); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	if c := byName["example-minimal-mgr"]; !c.Example || c.Golden != "../../../mutate/testdata/example-minimal-mgr.golden.yaml" || c.Policy != "" {
		t.Errorf("the minimal example: %+v", c)
	}
	if c := byName["seed"]; c.Example || c.Policy != "../../../mutate/testdata/seed.policy.yaml" {
		t.Errorf("seed: %+v", c)
	}
	for _, n := range []string{"seed.golden", "seed.policy", "example-minimal-mgr.golden"} {
		if _, ok := byName[n]; ok {
			t.Errorf("%s taken for an input", n)
		}
	}
	if _, err := Cases(t.TempDir()); err == nil {
		t.Error("an empty directory gave a corpus")
	}
}

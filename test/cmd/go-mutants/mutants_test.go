// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// The schema's verdicts are those of each mutant built alone (as gremlins
// builds them), over every context the rewriting treats apart; and the
// report says what each mutant did.
func TestSchemaAgreesWithMutantsBuiltAlone(t *testing.T) {
	t.Setenv("GOWORK", "off")
	t.Setenv("GOFLAGS", "-vet=off")
	r := &run{root: "testdata/mod", pkg: "./calc", workers: 2, coefficient: 20, minTimeout: 3 * time.Second, work: t.TempDir(), crossCheck: true}
	mutants, err := r.mutate()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Status{}
	alone := 0
	for _, m := range mutants {
		got[fmt.Sprintf("%s %d:%d", m.Type, m.Pos.Line, m.Pos.Column)] = m.Status
		if m.Alone && m.Status != NotCovered {
			alone++
		}
	}
	for at, want := range map[string]Status{
		"ARITHMETIC_BASE 14:17":       NotCovered, // the constant declaration
		"CONDITIONALS_BOUNDARY 18:7":  Lived,      // Clamp's lower bound: tested inside only
		"CONDITIONALS_NEGATION 18:7":  Killed,
		"CONDITIONALS_BOUNDARY 21:7":  Lived,
		"INCREMENT_DECREMENT 30:41":   Killed,    // a loop's post statement
		"CONDITIONALS_NEGATION 37:40": Killed,    // s == nil, of a slice
		"ARITHMETIC_BASE 40:58":       Killed,    // 2*time.Second
		"INVERT_NEGATIVES 43:33":      Killed,    // -n
		"CONDITIONALS_BOUNDARY 47:7":  Lived,     // a >= b of a type parameter
		"ARITHMETIC_BASE 55:15":       Killed,    // an array length, built alone
		"ARITHMETIC_BASE 60:51":       NotViable, // string - string
		"ARITHMETIC_BASE 63:47":       Killed,    // n % 2 -> n * 2
		"INCREMENT_DECREMENT 68:23":   TimedOut,  // i-- never reaches n
		"INCREMENT_DECREMENT 69:8":    Killed,
	} {
		if got[at] != want {
			t.Errorf("%s: %q, want %q", at, got[at], want)
		}
	}
	if alone != 2 {
		t.Errorf("%d mutants built alone, want the array length's 2", alone)
	}
	var out bytes.Buffer
	report(&out, mutants, time.Second)
	for _, line := range []string{
		"       LIVED CONDITIONALS_BOUNDARY at calc/calc.go:18:7\n",
		"  NOT VIABLE ARITHMETIC_BASE at calc/calc.go:60:51\n",
		"Killed: 19, Lived: 5, Not covered: 1\n",
		"Timed out: 1, Not viable: 1, Skipped: 0\n",
		"Test efficacy: 79.17%\n",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("the report has no line %q:\n%s", line, out.String())
		}
	}
	if _, err := os.Stat("testdata/mod/calc/zz_mutant_switch.go"); err == nil {
		t.Error("the switch was written into the package, not its overlay")
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Command go-mutants is mutation testing of one Go package by mutant
// schemata: the mutants gremlins v0.6.0 makes by default (each comparison's
// boundary and negation, each arithmetic operator, each increment and
// negation) are all compiled into one test binary, each behind a switch the
// binary reads from its environment, and the binary is run once per mutant
// with the package's tests (-test.failfast). A mutant is KILLED when a test
// fails, LIVED when every test passes, TIMED OUT past its deadline, NOT
// COVERED where no test reaches its line, and NOT VIABLE where the change
// does not type-check. gremlins builds and links a test binary per mutant
// (about 7 CPU-seconds for a package on controller-runtime); here a mutant
// costs one run of the tests.
//
// The few mutants a closure cannot hold (in a constant declaration or an
// array length, or of a type this package cannot name) are built alone,
// with an overlay holding the changed file, as gremlins builds each.
//
// The report is gremlins': a line per mutant, then its totals and "Test
// efficacy" (killed / (killed + lived)), which hack/mutation.sh reads.
//
// Run from the repository root: go -C test run ./cmd/go-mutants [-tags unit] [-exclude REGEXP] [-workers N] ./pkg
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/rook-mgr/mgr-webhook/test/internal/scratch"
)

func main() {
	tags := flag.String("tags", "", "build tags of the package's tests")
	exclude := flag.String("exclude", "", "leave out files whose names match this expression")
	workers := flag.Int("workers", 2, "mutants run at once")
	coefficient := flag.Int("timeout-coefficient", 20, "a mutant times out after this many times the unchanged tests' run (10 s at least)")
	minTimeout := flag.Duration("min-timeout", 10*time.Second, "the shortest deadline a mutant gets")
	crossCheck := flag.Bool("cross-check", false, "build every mutant alone too, as gremlins does, and fail where the verdicts differ (slow)")
	dir := flag.String("C", ".", "the module root the package path is relative to")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: go-mutants [flags] ./package")
		os.Exit(2)
	}
	var ex *regexp.Regexp
	if *exclude != "" {
		ex = regexp.MustCompile(*exclude)
	}
	// Stopped early, the schema and test binaries go too.
	work, err := scratch.Dir("go-mutants-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	r := &run{root: *dir, pkg: flag.Arg(0), tags: *tags, exclude: ex, workers: *workers, coefficient: *coefficient, minTimeout: *minTimeout, crossCheck: *crossCheck, work: work}
	start := time.Now()
	mutants, err := r.mutate()
	os.RemoveAll(work)
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-mutants:", err)
		os.Exit(1)
	}
	report(os.Stdout, mutants, time.Since(start))
}

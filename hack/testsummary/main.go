// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Command testsummary reads `go test -json` on stdin, passes the human output
// (build errors included) through, and ends with a count of tests run, passed,
// failed and skipped. It exits non-zero on any failure, on any skipped test (a
// skipped test hides a missing component and must not pass as green), and on
// a package with test files that ran no test. A plain line "== run: <name>"
// between runs (make test runs some packages again against other Ceph
// releases) names the runs that follow: their failures carry the name, the
// summary lists the runs with their counts, and a named run that ran no test
// at all fails (go test stopped before any package: a go.mod it cannot use,
// a toolchain it cannot get).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// runMark opens a named run in the input.
const runMark = "== run: "

type event struct {
	Action     string
	Package    string
	ImportPath string // build-output events name the package here
	Test       string
	Output     string
}

func main() { os.Exit(summarize(os.Stdin, os.Stdout)) }

// summarize copies the output, prints the summary and returns the exit code.
func summarize(in io.Reader, out io.Writer) int {
	counts := map[string]int{}
	ran := map[string]int{} // tests run per package
	var failed, skipped, empty []string
	run, perRun, runs := "", map[string]int{}, []string(nil)
	named := func(s string) string {
		if run == "" {
			return s
		}
		return s + " [" + run + "]"
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(out, sc.Text()) // plain text from older toolchains
			if name, ok := strings.CutPrefix(sc.Text(), runMark); ok {
				run, ran = strings.TrimSpace(name), map[string]int{}
				runs = append(runs, run)
			}
			continue
		}
		switch {
		case e.Action == "output" || e.Action == "build-output":
			fmt.Fprint(out, e.Output)
		case e.Test == "" && e.Action == "fail":
			failed = append(failed, named(e.Package+" (package)"))
		case e.Test == "" && e.Action == "pass" && ran[e.Package] == 0:
			empty = append(empty, named(e.Package))
		case e.Test != "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			counts[e.Action]++
			ran[e.Package]++
			perRun[run]++
			if e.Action == "fail" {
				failed = append(failed, named(e.Package+"."+e.Test))
			}
			if e.Action == "skip" {
				skipped = append(skipped, named(e.Package+"."+e.Test))
			}
		}
	}
	total := counts["pass"] + counts["fail"] + counts["skip"]
	fmt.Fprintf(out, "\n== tests: %d run, %d passed, %d failed, %d skipped\n", total, counts["pass"], counts["fail"], counts["skip"])
	if len(runs) > 0 {
		if perRun[""] > 0 {
			fmt.Fprintf(out, "   first run: %d tests\n", perRun[""])
		}
		for _, r := range runs {
			fmt.Fprintf(out, "   %s: %d tests\n", r, perRun[r])
		}
	}
	sort.Strings(failed)
	for _, f := range failed {
		fmt.Fprintln(out, "FAILED:", f)
	}
	for _, s := range skipped {
		fmt.Fprintln(out, "SKIPPED (not allowed):", s)
	}
	for _, p := range empty {
		fmt.Fprintln(out, "NO TESTS RAN (not allowed):", p)
	}
	silent := 0
	for _, r := range runs {
		if perRun[r] == 0 {
			fmt.Fprintf(out, "NO TESTS RAN (not allowed) in run %q: see its output above\n", r)
			silent++
		}
	}
	if len(failed) > 0 || len(skipped) > 0 || len(empty) > 0 || silent > 0 || total == 0 {
		return 1
	}
	return 0
}

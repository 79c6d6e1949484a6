// Command testsummary reads `go test -json` on stdin, passes the human output
// through, and ends with a count of tests run, passed, failed and skipped. It
// exits non-zero on any failure and on any skipped test: a skipped test hides a
// missing component and must not pass as green.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func main() {
	counts := map[string]int{}
	var failed, skipped []string
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Println(sc.Text()) // build errors arrive as plain text
			continue
		}
		if e.Action == "output" {
			fmt.Print(e.Output)
			continue
		}
		if e.Test == "" {
			if e.Action == "fail" {
				failed = append(failed, e.Package+" (package)")
			}
			continue
		}
		switch e.Action {
		case "pass", "fail", "skip":
			counts[e.Action]++
			if e.Action == "fail" {
				failed = append(failed, e.Package+"."+e.Test)
			}
			if e.Action == "skip" {
				skipped = append(skipped, e.Package+"."+e.Test)
			}
		}
	}
	total := counts["pass"] + counts["fail"] + counts["skip"]
	fmt.Printf("\n== tests: %d run, %d passed, %d failed, %d skipped\n", total, counts["pass"], counts["fail"], counts["skip"])
	sort.Strings(failed)
	for _, f := range failed {
		fmt.Println("FAILED:", f)
	}
	for _, s := range skipped {
		fmt.Println("SKIPPED (not allowed):", s)
	}
	if len(failed) > 0 || len(skipped) > 0 || total == 0 {
		os.Exit(1)
	}
}

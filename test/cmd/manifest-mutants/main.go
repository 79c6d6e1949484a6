// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Command manifest-mutants is mutation testing of the shipped YAML: it
// changes each rule of the kustomize bases and the Helm chart by one token,
// one at a time — each matchCondition's operators, numbers and literals,
// each objectSelector and namespaceSelector term, each admission rule, each
// RBAC verb, resource, resourceName and binding, each kustomize transformer's
// selector and field path — and runs the tests that read those files without
// a cluster (test/static/manifestrules, and those of test/integration/manifests and test/ceph/helm)
// against a copy of the checkout holding the change. A change no test fails
// on survives; each survivor must be listed in equivalent.txt with the
// reason no install behaves differently, and every listed one must survive.
//
// Run from the test module: go run ./cmd/manifest-mutants [-workers N] [-run REGEXP].
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rook-mgr/mgr-webhook/test/internal/scratch"
)

// suites are the test binaries a mutant of a file is judged by.
type suite struct {
	pkg, run string
}

var (
	rules     = suite{"./static/manifestrules/", ""}
	kustomize = suite{"./integration/manifests/", "^(TestWebhookConfigurationsOnlySeeMgrDeployments|TestWebhookDeploymentIsHighlyAvailableAndLocked|TestRBACIsLeastPrivilege|TestCertManagerOverlay|TestRelocationLeavesOthersObjectsAlone)$"}
	chart     = suite{"./ceph/helm/", "^(TestChartLints|TestChartValues|TestChartSchemaFits)$"}
)

// judgedBy: the installs a file's mutants are judged on (see
// test/static/manifestrules) and the suites that judge them.
type judgedBy struct {
	installs string
	suites   []suite
}

// sources are the files mutated, and what judges each.
func sources(root string) (map[string]judgedBy, error) {
	files := map[string]judgedBy{"charts/mgr-webhook/templates/generated.yaml": {"chart", []suite{rules, chart}}}
	err := filepath.WalkDir(filepath.Join(root, "manifests"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if strings.HasPrefix(rel, "manifests/examples/") {
			return nil
		}
		files[rel] = judgedBy{"kustomize", []suite{rules, kustomize}}
		return nil
	})
	return files, err
}

func main() {
	workers := flag.Int("workers", 2, "mutants judged at once, each in its own copy of the checkout")
	only := flag.String("run", "", "judge only the mutants whose key matches this regular expression")
	list := flag.Bool("list", false, "list the mutants and exit")
	flag.Parse()
	if err := run(*workers, *only, *list); err != nil {
		fmt.Fprintln(os.Stderr, "manifest-mutants:", err)
		os.Exit(1)
	}
}

func run(workers int, only string, list bool) error {
	root, err := filepath.Abs("..")
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "manifests")); err != nil {
		return fmt.Errorf("run from the test module (test/): %w", err)
	}
	files, err := sources(root)
	if err != nil {
		return err
	}
	var all []mutant
	for _, f := range slices.Sorted(maps.Keys(files)) {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return err
		}
		ms, err := enumerate(f, src)
		if err != nil {
			return err
		}
		all = append(all, ms...)
	}
	unique(all)
	if only != "" {
		re, err := regexp.Compile(only)
		if err != nil {
			return err
		}
		all = slices.DeleteFunc(all, func(m mutant) bool { return !re.MatchString(m.key) })
	}
	if list {
		for _, m := range all {
			fmt.Printf("%s:%d %s\n", m.file, m.line, m.key)
		}
		return nil
	}
	equivalent, err := readEquivalent("cmd/manifest-mutants/equivalent.txt")
	if err != nil {
		return err
	}

	// Stopped early, the copies and test binaries go too.
	work, err := scratch.Dir("manifest-mutants-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	binaries := map[suite]string{}
	for _, s := range []suite{rules, kustomize, chart} {
		bin := filepath.Join(work, strings.Trim(s.pkg, "./")+".test")
		if out, err := exec.Command("go", "test", "-c", "-o", bin, s.pkg).CombinedOutput(); err != nil {
			return fmt.Errorf("go test -c %s: %v\n%s", s.pkg, err, out)
		}
		binaries[s] = bin
	}
	// Each worker judges in a copy of the checkout: RepoRoot is found from
	// the working directory.
	copies := make(chan string, workers)
	for i := range workers {
		dir := filepath.Join(work, fmt.Sprintf("checkout-%d", i))
		if err := copyCheckout(root, dir); err != nil {
			return err
		}
		copies <- dir
	}
	// The unmutated checkout must pass, or every mutant would look killed.
	baseline := <-copies
	for _, s := range []suite{rules, kustomize, chart} {
		if failed, out := judge(baseline, binaries[s], s, ""); len(failed) > 0 {
			return fmt.Errorf("%s fails without a mutant: %v\n%s", s.pkg, failed, out)
		}
	}
	copies <- baseline

	start := time.Now()
	results := make([][]string, len(all))
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i, m := range all {
		dir := <-copies
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { copies <- dir }()
			path := filepath.Join(dir, m.file)
			src, err := os.ReadFile(path)
			if err != nil {
				results[i] = []string{"error: " + err.Error()}
				return
			}
			defer os.WriteFile(path, src, 0o644)
			if err := os.WriteFile(path, m.apply(src), 0o644); err != nil {
				results[i] = []string{"error: " + err.Error()}
				return
			}
			var killers []string
			for _, s := range files[m.file].suites {
				failed, _ := judge(dir, binaries[s], s, files[m.file].installs)
				killers = append(killers, failed...)
				if len(killers) > 0 {
					break
				}
			}
			results[i] = killers
			mu.Lock()
			done++
			if done%25 == 0 {
				fmt.Fprintf(os.Stderr, "[manifest-mutants] %d of %d judged (%s)\n", done, len(all), time.Since(start).Round(time.Second))
			}
			mu.Unlock()
		}()
	}
	wg.Wait()

	killed, listed := 0, 0
	var survived []string
	seen := map[string]bool{}
	for i, m := range all {
		k := results[i]
		switch {
		case len(k) > 0:
			killed++
			fmt.Printf("KILLED   %s:%d %s\n         by %s\n", m.file, m.line, m.key, byTest(k))
			if _, ok := equivalent[m.key]; ok {
				survived = append(survived, m.key+" (listed as equivalent, but killed: remove it from equivalent.txt)")
			}
		case equivalent[m.key] != "":
			listed++
			seen[m.key] = true
			fmt.Printf("EQUIV    %s:%d %s\n         %s\n", m.file, m.line, m.key, equivalent[m.key])
		default:
			fmt.Printf("SURVIVED %s:%d %s\n", m.file, m.line, m.key)
			survived = append(survived, m.key)
		}
	}
	if only == "" {
		for key := range equivalent {
			if !seen[key] && !slices.ContainsFunc(all, func(m mutant) bool { return m.key == key }) {
				survived = append(survived, key+" (listed as equivalent, but no such mutant: remove it from equivalent.txt)")
			}
		}
	}
	fmt.Printf("\n%d mutants of %d files: %d killed, %d equivalent (listed with a reason), %d not accounted for; %s\n",
		len(all), len(files), killed, listed, len(survived), time.Since(start).Round(time.Second))
	if len(survived) > 0 {
		return fmt.Errorf("%d mutants survive unexplained:\n  %s", len(survived), strings.Join(survived, "\n  "))
	}
	return nil
}

var failLine = regexp.MustCompile(`^\s*--- FAIL: (\S+)`)

// judge runs one suite in the checkout dir (test/static/manifestrules on the
// installs named) and returns the tests that fail
// (the deepest subtests), or the whole output when the binary fails otherwise.
func judge(dir, bin string, s suite, installs string) ([]string, string) {
	// One failed test kills the mutant: -failfast stops there.
	args := []string{"-test.count=1", "-test.failfast"}
	if s.run != "" {
		args = append(args, "-test.run", s.run)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "MANIFESTRULES_INSTALLS="+installs)
	cmd.Dir = filepath.Join(dir, "test", strings.Trim(s.pkg, "./"))
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil, string(out)
	}
	var failed []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if m := failLine.FindStringSubmatch(sc.Text()); m != nil {
			failed = slices.DeleteFunc(failed, func(f string) bool { return strings.HasPrefix(m[1], f+"/") })
			failed = append(failed, m[1])
		}
	}
	if len(failed) == 0 {
		failed = []string{s.pkg + " (" + firstLine(string(out)) + ")"}
	}
	return failed, string(out)
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return "no output"
}

// readEquivalent reads "key<TAB>reason" lines; # starts a comment.
func readEquivalent(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for i, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		key, reason, ok := strings.Cut(l, "\t")
		if !ok || strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("%s:%d: want key<TAB>reason", path, i+1)
		}
		out[key] = reason
	}
	return out, nil
}

// unique names the second and later versions of an object a chart
// template writes (if/else, range) by their order.
func unique(ms []mutant) {
	seen := map[string]int{}
	for i := range ms {
		seen[ms[i].key]++
		if n := seen[ms[i].key]; n > 1 {
			ms[i].key += fmt.Sprintf(" (version %d)", n)
		}
	}
}

// copyCheckout copies the files git knows of (tracked, or new and not
// ignored) to dir.
func copyCheckout(root, dir string) error {
	out, err := exec.Command("git", "-C", root, "ls-files", "-co", "--exclude-standard", "-z").Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, f)
		info, err := os.Lstat(src)
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, info.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

// byTest names the failed tests, each with the installs (subtests) it
// failed on.
func byTest(failed []string) string {
	subtests := map[string][]string{}
	var order []string
	for _, f := range failed {
		test, sub, _ := strings.Cut(f, "/")
		if _, ok := subtests[test]; !ok {
			order = append(order, test)
		}
		if sub != "" {
			subtests[test] = append(subtests[test], sub)
		} else {
			subtests[test] = subtests[test][:0:0]
		}
	}
	var parts []string
	for _, test := range order {
		if subs := subtests[test]; len(subs) > 0 {
			parts = append(parts, fmt.Sprintf("%s on %s", test, strings.Join(subs, ", ")))
		} else {
			parts = append(parts, test)
		}
	}
	return strings.Join(parts, "; ")
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type run struct {
	root, pkg, tags string
	exclude         *regexp.Regexp
	workers         int
	coefficient     int
	minTimeout      time.Duration
	work            string
	// crossCheck builds every mutant alone too and fails on any verdict
	// the schema does not share: the proof that the switch changes
	// nothing else.
	crossCheck bool
}

// listed is what go list says of the package.
type listed struct {
	Dir, Name, ImportPath   string
	GoFiles, IgnoredGoFiles []string
}

func (r *run) goCmd(args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Dir = r.root
	cmd.Stderr = os.Stderr
	return cmd
}

func (r *run) tagArgs() []string {
	if r.tags == "" {
		return nil
	}
	return []string{"-tags", r.tags}
}

func (r *run) mutate() ([]*Mutant, error) {
	out, err := r.goCmd(append(append([]string{"list", "-json"}, r.tagArgs()...), r.pkg)...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", r.pkg, err)
	}
	var p listed
	if err := json.Unmarshal(out, &p); err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	srcs := map[string][]byte{}
	var files []*ast.File
	for _, name := range p.GoFiles {
		path := filepath.Join(p.Dir, name)
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		srcs[path] = src
		files = append(files, f)
	}
	pkg, info, err := r.check(fset, p, files)
	if err != nil {
		return nil, err
	}
	covered, err := r.coverage(p)
	if err != nil {
		return nil, err
	}

	var all []*Mutant
	id := 0
	for _, f := range files {
		path := fset.Position(f.Pos()).Filename
		if r.excluded(p.Dir, path) {
			continue
		}
		for _, m := range Enumerate(fset, pkg, info, f, path, &id) {
			m.Pos.Filename = r.rel(path)
			if !covered(filepath.Base(path), m.Pos) {
				m.Status = NotCovered
			}
			all = append(all, m)
		}
	}
	// Files this build leaves out are there for gremlins too: not covered.
	for _, name := range p.IgnoredGoFiles {
		path := filepath.Join(p.Dir, name)
		if strings.HasSuffix(name, "_test.go") || r.excluded(p.Dir, path) {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if pos, tok, ok := opPos(n); ok {
				for _, m := range mutations[tok] {
					id++
					all = append(all, &Mutant{ID: id, Type: m.typ, File: path, Pos: fset.Position(pos), From: tok, To: m.to, Status: NotCovered})
					all[len(all)-1].Pos.Filename = r.rel(path)
				}
			}
			return true
		})
	}

	schema, err := r.buildSchema(fset, pkg, info, p, files, srcs, all)
	if err != nil {
		return nil, err
	}
	timeout, err := r.baseline(p.Dir, schema)
	if err != nil {
		return nil, err
	}
	var queue []*Mutant
	for _, m := range all {
		if m.Status == "" && m.Alone {
			queue = append(queue, m) // the costly ones first, for an even end
		}
	}
	for _, m := range all {
		if m.Status == "" && !m.Alone {
			queue = append(queue, m)
		}
	}
	jobs := make(chan *Mutant)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var differ []string
	for range max(r.workers, 1) {
		wg.Go(func() {
			for m := range jobs {
				if m.Alone {
					m.Status = r.alone(fset, p.Dir, srcs[m.File], m, timeout)
					continue
				}
				m.Status = r.exec(p.Dir, schema, m.ID, timeout)
				if r.crossCheck {
					if alone := r.alone(fset, p.Dir, srcs[m.File], m, timeout); alone != m.Status {
						mu.Lock()
						differ = append(differ, fmt.Sprintf("%s at %s: %s in the schema, %s built alone", m.Type, m.Pos, m.Status, alone))
						mu.Unlock()
					}
				}
			}
		})
	}
	for _, m := range queue {
		jobs <- m
	}
	close(jobs)
	wg.Wait()
	if len(differ) > 0 {
		slices.Sort(differ)
		return all, fmt.Errorf("the schema and the mutants built alone disagree:\n%s", strings.Join(differ, "\n"))
	}
	return all, nil
}

func (r *run) excluded(dir, path string) bool {
	rel, _ := filepath.Rel(dir, path)
	return r.exclude != nil && r.exclude.MatchString(rel)
}

// rel names a file as the report shows it: from the module root.
func (r *run) rel(path string) string {
	root, _ := filepath.Abs(r.root)
	if rel, err := filepath.Rel(root, path); err == nil {
		return rel
	}
	return path
}

// check type-checks the package against its dependencies' export data.
func (r *run) check(fset *token.FileSet, p listed, files []*ast.File) (*types.Package, *types.Info, error) {
	out, err := r.goCmd(append(append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, r.tagArgs()...), r.pkg)...).Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go list -export %s: %w", r.pkg, err)
	}
	exports := map[string]string{}
	for line := range strings.Lines(string(out)) {
		path, file, _ := strings.Cut(strings.TrimSpace(line), "\t")
		exports[path] = file
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	pkg, err := conf.Check(p.ImportPath, fset, files, info)
	if err != nil {
		return nil, nil, fmt.Errorf("type-checking %s: %w", r.pkg, err)
	}
	for _, name := range []string{switchVar, importName + "OS", importName + "Strconv"} {
		if pkg.Scope().Lookup(name) != nil {
			return nil, nil, fmt.Errorf("%s declares %s, the name the schema's switch takes", r.pkg, name)
		}
	}
	return pkg, info, nil
}

// coverage runs the package's tests once with a coverage profile and says
// whether a position is covered, as gremlins decides it: on a line inside
// a block a test ran, or on its first or last line within its columns.
func (r *run) coverage(p listed) (func(file string, pos token.Position) bool, error) {
	profile := filepath.Join(r.work, "cover.out")
	args := append(append([]string{"test"}, r.tagArgs()...), "-covermode=set", "-coverprofile="+profile, r.pkg)
	cmd := r.goCmd(args...)
	cmd.Stdout = io.Discard
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("the unchanged package's tests: %w", err)
	}
	f, err := os.Open(profile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	type block struct{ sl, sc, el, ec int }
	blocks := map[string][]block{}
	line := regexp.MustCompile(`^(.+):(\d+)\.(\d+),(\d+)\.(\d+) \d+ (\d+)$`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil || m[6] == "0" {
			continue
		}
		n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
		file := filepath.Base(m[1])
		if filepath.Dir(m[1]) != p.ImportPath {
			continue
		}
		blocks[file] = append(blocks[file], block{n(2), n(3), n(4), n(5)})
	}
	return func(file string, pos token.Position) bool {
		for _, b := range blocks[file] {
			switch {
			case pos.Line > b.sl && pos.Line < b.el:
				return true
			case b.sl == b.el && pos.Line == b.sl && pos.Column >= b.sc && pos.Column <= b.ec:
				return true
			case b.sl < b.el && pos.Line == b.sl && pos.Column >= b.sc:
				return true
			case b.sl < b.el && pos.Line == b.el && pos.Column <= b.ec:
				return true
			}
		}
		return false
	}, sc.Err()
}

// overlay is go build's -overlay file.
func writeOverlay(path string, replace map[string]string) error {
	data, err := json.Marshal(map[string]map[string]string{"Replace": replace})
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

func (r *run) buildSchema(fset *token.FileSet, pkg *types.Package, info *types.Info, p listed, files []*ast.File, srcs map[string][]byte, all []*Mutant) (string, error) {
	dir := filepath.Join(r.work, "schema")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	replace := map[string]string{}
	for _, f := range files {
		path := fset.Position(f.Pos()).Filename
		var mine []*Mutant
		for _, m := range all {
			if m.File == path {
				mine = append(mine, m)
			}
		}
		if !slices.ContainsFunc(mine, func(m *Mutant) bool { return m.Status == "" && !m.Alone }) {
			continue
		}
		out := filepath.Join(dir, filepath.Base(path))
		if err := os.WriteFile(out, Schema(srcs[path], fset, pkg, info, f, mine), 0o600); err != nil {
			return "", err
		}
		replace[path] = out
	}
	sw := filepath.Join(dir, "zz_mutant_switch.go")
	if err := os.WriteFile(sw, SwitchFile(p.Name), 0o600); err != nil {
		return "", err
	}
	replace[filepath.Join(p.Dir, "zz_mutant_switch.go")] = sw
	overlay := filepath.Join(r.work, "schema.json")
	if err := writeOverlay(overlay, replace); err != nil {
		return "", err
	}
	bin := filepath.Join(r.work, "schema.test")
	if err := r.goCmd(append(append([]string{"test", "-c", "-o", bin, "-overlay", overlay}, r.tagArgs()...), r.pkg)...).Run(); err != nil {
		return "", fmt.Errorf("building the schema of %s (the rewritten files are in %s): %w", r.pkg, dir, err)
	}
	return bin, nil
}

// baseline runs the schema with no mutant active: its tests must pass, and
// their time sets each mutant's deadline (minTimeout at least: a run beside
// other work can take many times its time alone).
func (r *run) baseline(dir, bin string) (time.Duration, error) {
	start := time.Now()
	if st := r.exec(dir, bin, 0, 10*time.Minute); st != Lived {
		return 0, fmt.Errorf("%s's tests fail with no mutant active (%s): the schema changed what the package does", r.pkg, st)
	}
	return max(time.Duration(r.coefficient)*time.Since(start), r.minTimeout), nil
}

// exec runs a test binary with one mutant active.
func (r *run) exec(dir, bin string, id int, timeout time.Duration) Status {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.failfast", "-test.timeout", (timeout + 2*time.Second).String())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", mutantEnv, id))
	// The tests' own children go with them at the deadline.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return TimedOut
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return Killed
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-mutants: running mutant %d: %v\n", id, err)
		return Killed
	}
	return Lived
}

// alone builds one mutant as gremlins builds each: the package with the
// changed file in its place.
func (r *run) alone(fset *token.FileSet, dir string, src []byte, m *Mutant, timeout time.Duration) Status {
	d := filepath.Join(r.work, fmt.Sprintf("alone-%d", m.ID))
	defer os.RemoveAll(d)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return Killed
	}
	changed := filepath.Join(d, filepath.Base(m.File))
	overlay := filepath.Join(d, "overlay.json")
	if os.WriteFile(changed, Mutated(src, fset, m), 0o600) != nil || writeOverlay(overlay, map[string]string{m.File: changed}) != nil {
		return Killed
	}
	bin := filepath.Join(d, "alone.test")
	cmd := r.goCmd(append(append([]string{"test", "-c", "-o", bin, "-overlay", overlay}, r.tagArgs()...), r.pkg)...)
	cmd.Stderr = io.Discard
	if cmd.Run() != nil {
		return NotViable
	}
	return r.exec(dir, bin, 0, timeout)
}

// report writes gremlins' report: a line per mutant, then the totals.
func report(w io.Writer, mutants []*Mutant, elapsed time.Duration) {
	slices.SortStableFunc(mutants, func(a, b *Mutant) int {
		return cmpPos(a.Pos, b.Pos)
	})
	count := map[Status]int{}
	alone := 0
	for _, m := range mutants {
		count[m.Status]++
		if m.Alone && m.Status != NotCovered {
			alone++
		}
		fmt.Fprintf(w, "%12s %s at %s\n", m.Status, m.Type, m.Pos)
	}
	fmt.Fprintf(w, "\nMutation testing completed in %s\n", elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "Killed: %d, Lived: %d, Not covered: %d\n", count[Killed], count[Lived], count[NotCovered])
	fmt.Fprintf(w, "Timed out: %d, Not viable: %d, Skipped: 0\n", count[TimedOut], count[NotViable])
	fmt.Fprintf(w, "Built alone: %d; the others ran in one test binary\n", alone)
	efficacy, coverage := 0.0, 0.0
	if k := count[Killed]; k > 0 {
		efficacy = float64(k) / float64(k+count[Lived]) * 100
	}
	if kl := count[Killed] + count[Lived]; kl > 0 {
		coverage = float64(kl) / float64(kl+count[NotCovered]) * 100
	}
	fmt.Fprintf(w, "Test efficacy: %.2f%%\n", efficacy)
	fmt.Fprintf(w, "Mutator coverage: %.2f%%\n", coverage)
}

func cmpPos(a, b token.Position) int {
	if c := strings.Compare(a.Filename, b.Filename); c != 0 {
		return c
	}
	if a.Line != b.Line {
		return a.Line - b.Line
	}
	return a.Column - b.Column
}

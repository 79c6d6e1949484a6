// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package testtree holds test/README.md to the tree: every directory of this
// module with tests has its row, under the tier of what it needs, and every
// row names a directory that exists.
package testtree

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// tiers: the top directory each section of the map stands for.
// The mutation testers (cmd/) are tools whose tests need nothing either.
var tiers = map[string][]string{"Static": {"static/", "cmd/"}, "Integration": {"integration/"}, "Ceph": {"ceph/"}, "End to end": {"e2e"}}

func TestTheMapListsEverySuite(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{} // directory -> section
	section := ""
	row := regexp.MustCompile("^\\| (`[^|]+`) \\|")
	for _, line := range strings.Split(string(readme), "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			section, _, _ = strings.Cut(h, ":")
			continue
		}
		if m := row.FindStringSubmatch(line); m != nil && m[1] != "`directory`" {
			for _, d := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(m[1], -1) {
				listed[d[1]] = section
			}
		}
	}
	var suites []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return fs.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		dir, _ := filepath.Rel(root, filepath.Dir(p))
		if !strings.HasPrefix(dir, "internal") && (len(suites) == 0 || suites[len(suites)-1] != dir) {
			suites = append(suites, dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(suites) < 20 {
		t.Fatalf("found %d test directories; want the whole tree", len(suites))
	}
	for _, dir := range suites {
		section, ok := listed[dir]
		if !ok {
			t.Errorf("test/%s has tests but no row in test/README.md", dir)
			continue
		}
		tops, ok := tiers[section]
		if !ok {
			t.Errorf("test/%s is listed under %q, not a tier of the map", dir, section)
		}
		if !slices.ContainsFunc(tops, func(top string) bool { return strings.HasPrefix(dir, top) }) {
			t.Errorf("test/%s is listed under %q, whose suites live in test/%s", dir, section, strings.Join(tops, ", test/"))
		}
	}
	for dir := range listed {
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			t.Errorf("test/README.md lists %s: %v", dir, err)
		}
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// remoteRef is how the README refers to this repository's kustomizations.
var remoteRef = regexp.MustCompile(`https://github\.com/rook-mgr/mgr-webhook//([^?\s]+)\?ref=\S+`)

// READMEKustomization returns the README's kustomization block name
// (READMEBlock) with its references to this repository on GitHub pointed at
// the checkout, relative to a kustomization that KustomizationInCheckout
// writes: kustomize takes relative paths only. A block that names no such
// reference would test nothing of the checkout, and is an error.
func READMEKustomization(name string) (string, error) {
	block, err := READMEBlock(name)
	if err != nil {
		return "", err
	}
	local := remoteRef.ReplaceAllString(block, "../$1")
	if local == block {
		return "", fmt.Errorf("README.md: the %s block names no https://github.com/rook-mgr/mgr-webhook//...?ref= kustomization", name)
	}
	return local, nil
}

// READMEBlock returns the fenced code block that follows the marker
// `<!-- test: name -->` in the README or in a page of docs/ (the README's
// reference pages), so that a test runs the very text a user copies. A
// marker found twice is an error: a test would run one of the two.
func READMEBlock(name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return "", err
	}
	marker := "<!-- test: " + name + " -->"
	var found, file string
	for _, page := range append([]string{filepath.Join(root, "README.md")}, pages...) {
		data, err := os.ReadFile(page)
		if err != nil {
			return "", err
		}
		_, after, ok := strings.Cut(string(data), marker)
		if !ok {
			continue
		}
		rel, _ := filepath.Rel(root, page)
		if file != "" {
			return "", fmt.Errorf("%s and %s both have %s", file, rel, marker)
		}
		file = rel
		after = strings.TrimLeft(after, "\n")
		if !strings.HasPrefix(after, "```") {
			return "", fmt.Errorf("%s: %s is not followed by a fenced code block", rel, marker)
		}
		_, body, _ := strings.Cut(after, "\n")
		block, _, ok := strings.Cut(body, "\n```")
		if !ok {
			return "", fmt.Errorf("%s: the code block after %s is not closed", rel, marker)
		}
		found = block + "\n"
	}
	if file == "" {
		return "", fmt.Errorf("neither README.md nor docs/ has %s", marker)
	}
	return found, nil
}

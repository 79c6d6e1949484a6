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
// `<!-- test: name -->` in the README, so that a test runs the very text a
// user copies.
func READMEBlock(name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		return "", err
	}
	marker := "<!-- test: " + name + " -->"
	_, after, ok := strings.Cut(string(data), marker)
	if !ok {
		return "", fmt.Errorf("README.md has no %s", marker)
	}
	after = strings.TrimLeft(after, "\n")
	if !strings.HasPrefix(after, "```") {
		return "", fmt.Errorf("README.md: %s is not followed by a fenced code block", marker)
	}
	_, body, _ := strings.Cut(after, "\n")
	block, _, ok := strings.Cut(body, "\n```")
	if !ok {
		return "", fmt.Errorf("README.md: the code block after %s is not closed", marker)
	}
	return block + "\n", nil
}

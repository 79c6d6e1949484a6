// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package ceph

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"time"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// Version is the project's one Ceph release type (contract.CephVersion).
type Version = contract.CephVersion

var banner = regexp.MustCompile(`ceph version (\d+)\.(\d+)\.(\d+)`)

// ParseVersion reads a daemon's version banner, "ceph version 16.2.15
// (618f4408...) pacific (stable)", as `ceph mgr metadata` reports it.
func ParseVersion(s string) (Version, error) {
	m := banner.FindStringSubmatch(s)
	if m == nil {
		return Version{}, fmt.Errorf("%q is not a ceph version banner", s)
	}
	var n [3]int
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1]) // \d+ always parses
	}
	return Version{Major: n[0], Minor: n[1], Patch: n[2]}, nil
}

// CLIVersion is the release of the runner's ceph CLI (`ceph --version`,
// which needs no cluster). The controller logs it at start: a cluster of a
// newer release may hold keys this CLI cannot read.
func (r *Runner) CLIVersion(ctx context.Context) (Version, error) {
	bin := r.Binary
	if bin == "" {
		bin = "ceph"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return Version{}, fmt.Errorf("%s --version: %w", bin, err)
	}
	return ParseVersion(string(out))
}

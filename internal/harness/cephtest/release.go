// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package cephtest

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// Release is the release of the ceph CLI first in PATH: the release the
// test clusters' daemons run (make test puts another release's tools first
// for its other runs).
// (The banner is "ceph version 16.2.15 (...) pacific (stable)"; this
// package cannot use bootstrap/ceph's parser, whose tests use this one.)
func Release() (contract.CephVersion, error) {
	banner, err := exec.Command("ceph", "--version").Output()
	if err != nil {
		return contract.CephVersion{}, fmt.Errorf("ceph --version: %w", err)
	}
	f := strings.Fields(string(banner))
	if len(f) < 3 || f[0] != "ceph" || f[1] != "version" {
		return contract.CephVersion{}, fmt.Errorf("ceph --version: %q is no version banner", banner)
	}
	return contract.ParseCephTag(f[2])
}

// exampleImage is the Ceph image line of the minimal example.
var exampleImage = regexp.MustCompile(`(image: quay\.io/ceph/ceph:v)[0-9]+\.[0-9]+\.[0-9]+`)

// AtDaemonRelease names, in a manifest of the minimal example, the release
// the local daemons run (Release) instead of the example's: the release
// guard judges another as an upgrade (three majors from Pacific are refused)
// once the controller has recorded the cluster, a moment a harness cannot
// time.
func AtDaemonRelease(manifest []byte) ([]byte, error) {
	r, err := Release()
	if err != nil {
		return nil, err
	}
	return exampleImage.ReplaceAll(manifest, []byte("${1}"+r.String())), nil
}

// Key types, as the first two bytes of an encoded cephx key say.
const (
	KeyTypeAES     = 1
	KeyTypeAES256K = 2
)

// KeyType is the type of a cephx key as `ceph auth get-key` prints it.
func KeyType(key string) (uint16, error) {
	raw, err := base64.StdEncoding.DecodeString(key)
	if err != nil {
		return 0, err
	}
	if len(raw) < 2 {
		return 0, errors.New("too short for a cephx key")
	}
	return binary.LittleEndian.Uint16(raw), nil
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package cephtest

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
)

// Release is the release of the ceph CLI first in PATH: the release the
// test clusters' daemons run (make test puts another release's tools first
// for its other runs).
func Release() (ceph.Version, error) {
	banner, err := exec.Command("ceph", "--version").Output()
	if err != nil {
		return ceph.Version{}, fmt.Errorf("ceph --version: %w", err)
	}
	return ceph.ParseVersion(string(banner))
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

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package contract

import (
	"fmt"
	"strconv"
	"strings"
)

// CephVersion is a Ceph release number: 13.2.3 is Mimic, 16.2.15 Pacific.
// The webhook reads it from an image tag, the controller from a daemon's
// version banner; both judge it by the same facts below.
type CephVersion struct{ Major, Minor, Patch int }

// The releases whose facts the project plans by.
var (
	// Nautilus: `config set --force`, the orchestrator and rook modules.
	Nautilus = CephVersion{14, 0, 0}
	Octopus  = CephVersion{15, 0, 0}
	// Pacific (16.2): the dashboard password on stdin (`-i`, `--force-password`).
	Pacific = CephVersion{16, 2, 0}
	// Tentacle: cephx keys of a new type, which older CLIs cannot read.
	Tentacle = CephVersion{20, 0, 0}

	// OldestMaintained is the oldest release Ceph still maintains, the
	// default policy's minimum: Squid 19.2, the last of the three "Active
	// Releases" on docs.ceph.com/en/latest/releases (Umbrella 21.2,
	// Tentacle 20.2, Squid 19.2) in 2026-12, and Rook's minimum. Older
	// releases are end of life; a policy admits them by lowering
	// images.minimumCephVersion. Raise it when Ceph archives Squid.
	OldestMaintained = CephVersion{19, 2, 0}

	// KeyRotation is the first release whose mons rotate a key in place
	// (`ceph auth rotate`), as Rook documents for its own key rotation
	// (Squid 19.2.3; Pacific has no such command).
	KeyRotation = CephVersion{19, 2, 3}

	// RookModuleBroken is the window, from its first release up to (not
	// including) its second, where Rook turns the rook module off
	// (rook#18213): 20.2.2 leaks memory in it (rook#17786), 20.2.3 and
	// 20.2.4 crash the mgr (rook#18124). The controller does not enable it
	// there, and turns it off where it had turned it on.
	RookModuleBroken = [2]CephVersion{{20, 2, 2}, {20, 2, 5}}
)

// ReleaseNames are the releases' names by major, as the mgr map keys each
// release's always-on modules.
var ReleaseNames = map[int]string{14: "nautilus", 15: "octopus", 16: "pacific", 17: "quincy", 18: "reef", 19: "squid", 20: "tentacle", 21: "umbrella"}

// ReleaseMajor is the major of a release's name ("pacific" is 16), as
// `ceph osd dump` names require_osd_release; false for a name not known.
func ReleaseMajor(name string) (int, bool) {
	for major, n := range ReleaseNames {
		if n == name {
			return major, true
		}
	}
	return 0, false
}

// KnownBadUpgrade is an upgrade path that Ceph's own notes say fails: from
// a release in From to one in To (each window: first release, up to and not
// including the second).
type KnownBadUpgrade struct {
	From, To [2]CephVersion
	Issue    string
	Why      string
}

// KnownBadUpgrades are the paths the release guard refuses by name.
var KnownBadUpgrades = []KnownBadUpgrade{
	{From: [2]CephVersion{{19, 2, 6}, {20, 0, 0}}, To: [2]CephVersion{{20, 0, 0}, {20, 2, 4}}, Issue: "ceph/ceph#71803",
		Why: "from Squid 19.2.6 the mgrs upgrade to a Tentacle before 20.2.4 but the other daemons may fail to"},
}

// In reports whether v is in window: at least its first release and before
// its second.
func (v CephVersion) In(window [2]CephVersion) bool {
	return v.AtLeast(window[0]) && !v.AtLeast(window[1])
}

// Compare orders v and o: -1, 0 or +1 (for slices.SortFunc).
func (v CephVersion) Compare(o CephVersion) int {
	switch {
	case v == o:
		return 0
	case v.AtLeast(o):
		return 1
	}
	return -1
}

// AtLeast reports v >= o.
func (v CephVersion) AtLeast(o CephVersion) bool {
	if v.Major != o.Major {
		return v.Major > o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor > o.Minor
	}
	return v.Patch >= o.Patch
}

func (v CephVersion) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// ParseCephTag reads the release from an image tag such as "v16.2.15",
// "v13.2.3-20190410" or "v17": an optional v, then up to three dot-separated
// numbers, then an optional -suffix (the build date of Ceph's images).
func ParseCephTag(tag string) (CephVersion, error) {
	s := strings.TrimPrefix(tag, "v")
	if i := strings.IndexByte(s, '-'); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if s == "" || len(parts) > 3 {
		return CephVersion{}, fmt.Errorf("%q is not a Ceph release (want e.g. v19.2.3)", tag)
	}
	var nums [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return CephVersion{}, fmt.Errorf("%q is not a Ceph release (want e.g. v19.2.3)", tag)
		}
		nums[i] = n
	}
	return CephVersion{nums[0], nums[1], nums[2]}, nil
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"fmt"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// UpgradeFacts are what the controller last read of a mgr's Ceph cluster:
// the release floors its mons and OSDs hold, its health and its standby
// mgrs. The release guard judges a change of a mgr's Ceph release by them.
type UpgradeFacts struct {
	// RequireOSDRelease is `ceph osd dump`'s require_osd_release ("pacific").
	RequireOSDRelease string
	// MinMonRelease is the monmap's min_mon_release, a major (16).
	MinMonRelease int
	// Health is `ceph health`'s status: HEALTH_OK, HEALTH_WARN or HEALTH_ERR.
	Health string
	// Standbys is the number of standby mgrs in the mgr map.
	Standbys int
}

// UpgradeJudgement is the release guard's judgement of a mgr's new release.
type UpgradeJudgement struct {
	// Refusals each name a rule of Ceph's upgrade path the change breaks,
	// and the fix.
	Refusals []string
	// Cautions say what makes the change risky now, without refusing it.
	Cautions []string
}

// maxMajorJump is how many majors Ceph upgrades across at once (cephadm's
// rule, and the release floors': a release reads the formats of the two
// before it).
const maxMajorJump = 2

// JudgeUpgrade judges a mgr that ran release from and is to run release to,
// in a cluster with facts (nil: not read yet). It follows cephadm's rules
// (src/pybind/mgr/cephadm/upgrade.py: at most two majors at a time, no
// major downgrade, no downgrade to a pre-release, min_mon_release and
// require_osd_release at least the target's major less two) and refuses
// the known-bad paths by name. The guard is for a change: from == to is
// judged by nothing.
func JudgeUpgrade(from, to contract.CephVersion, facts *UpgradeFacts) UpgradeJudgement {
	var j UpgradeJudgement
	if from == to {
		return j
	}
	floor := to.Major - maxMajorJump
	switch {
	case to.Major-from.Major > maxMajorJump:
		j.Refusals = append(j.Refusals, fmt.Sprintf(
			"Ceph %s to %s crosses %d majors, and Ceph upgrades across at most %d at a time: upgrade every daemon to %s first",
			from, to, to.Major-from.Major, maxMajorJump, releaseName(from.Major+maxMajorJump)))
	case to.Major < from.Major:
		j.Refusals = append(j.Refusals, fmt.Sprintf(
			"Ceph %s to %s goes back a major release, which Ceph cannot do (the cluster has written %s's formats): keep %s or later",
			from, to, releaseName(from.Major), releaseName(from.Major)))
	case to.Major == from.Major && to.Minor < from.Minor:
		j.Refusals = append(j.Refusals, fmt.Sprintf(
			"Ceph %s to %s goes back from a stable release to a pre-release (%d.%d): keep %d.%d or later",
			from, to, to.Major, to.Minor, from.Major, from.Minor))
	}
	for _, bad := range contract.KnownBadUpgrades {
		if from.In(bad.From) && to.In(bad.To) {
			j.Refusals = append(j.Refusals, fmt.Sprintf("Ceph %s to %s is a known-bad upgrade (%s): %s; upgrade to %s or later instead",
				from, to, bad.Issue, bad.Why, bad.To[1]))
		}
	}
	if facts == nil {
		j.Cautions = append(j.Cautions, "the controller has not read this cluster's release floors and health yet: the release change is judged by its images alone")
		return j
	}
	if facts.MinMonRelease < floor {
		j.Refusals = append(j.Refusals, fmt.Sprintf(
			"the cluster's min_mon_release is %s, and Ceph %s needs %s or later: upgrade every mon to %s first (min_mon_release follows the oldest mon)",
			releaseName(facts.MinMonRelease), to, releaseName(floor), releaseName(floor)))
	}
	if osd, ok := contract.ReleaseMajor(facts.RequireOSDRelease); !ok || osd < floor {
		j.Refusals = append(j.Refusals, fmt.Sprintf(
			"the cluster's require_osd_release is %q, and Ceph %s needs %s or later: once every OSD runs %s or later, raise it with `ceph osd require-osd-release %s`",
			facts.RequireOSDRelease, to, releaseName(floor), releaseName(floor), contract.ReleaseNames[floor]))
	}
	if facts.Health != "HEALTH_OK" {
		j.Cautions = append(j.Cautions, fmt.Sprintf("the cluster is %s: start a Ceph upgrade from HEALTH_OK (`ceph health detail` says what is wrong)", facts.Health))
	}
	if facts.Standbys == 0 {
		j.Cautions = append(j.Cautions, "the cluster has no standby mgr: while this mgr restarts on the new release there is none; run a second mgr first")
	}
	return j
}

// releaseName is a major with its release's name: "18 (reef)".
func releaseName(major int) string {
	if n, ok := contract.ReleaseNames[major]; ok {
		return fmt.Sprintf("%d (%s)", major, n)
	}
	return fmt.Sprint(major)
}

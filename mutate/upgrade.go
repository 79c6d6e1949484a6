// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

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
	// Mons are the releases the mons run, oldest first: a new mgr joins
	// the cluster from the oldest.
	Mons []contract.CephVersion
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
// in a cluster with facts (nil: not read yet, judged by the releases alone). It follows cephadm's rules
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
		// Not read yet (or no controller): the images alone. No caution: a
		// warning on every release change of such an install is noise.
		return j
	}
	if facts.MinMonRelease < floor {
		j.Refusals = append(j.Refusals, fmt.Sprintf(
			"the cluster's min_mon_release is %s, and Ceph %s needs %s or later: upgrade every mon to %s first (min_mon_release follows the oldest mon)",
			releaseName(facts.MinMonRelease), to, releaseName(floor), releaseName(floor)))
	}
	if osd, ok := contract.ReleaseMajor(facts.RequireOSDRelease); !ok || osd < floor {
		name, known := contract.ReleaseNames[floor]
		if !known {
			name = fmt.Sprintf("<the name of release %d>", floor)
		}
		j.Refusals = append(j.Refusals, fmt.Sprintf(
			"the cluster's require_osd_release is %q, and Ceph %s needs %s or later: once every OSD runs %s or later, raise it with `ceph osd require-osd-release %s`",
			facts.RequireOSDRelease, to, releaseName(floor), releaseName(floor), name))
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

// ValidateRelease judges the change of a mgr's Ceph release that a write
// makes (old is nil for a create) by JudgeUpgrade: its refusals under rule
// images.upgradePath, its cautions under images.upgradeReadiness. A mgr
// whose release does not change, whose image names no release (other rules
// say so), or of a namespace images.upgradePath exempts, is judged by
// nothing; a new mgr is judged against the cluster's oldest mon once the
// controller has read it (info.Upgrade).
func ValidateRelease(old, d *appsv1.Deployment, info ClusterInfo, p *Policy) field.ErrorList {
	if slices.Contains(p.Images.UpgradePath.ExemptNamespaces, info.Namespace) {
		return nil
	}
	to, fp, image, ok := mgrRelease(d)
	if !ok {
		return nil
	}
	var from contract.CephVersion
	switch {
	case old != nil:
		if from, _, _, ok = mgrRelease(old); !ok {
			return nil
		}
	case info.Upgrade != nil && len(info.Upgrade.Mons) > 0:
		from = info.Upgrade.Mons[0]
	default:
		return nil
	}
	j := JudgeUpgrade(from, to, info.Upgrade)
	var errs field.ErrorList
	for _, r := range j.Refusals {
		errs = append(errs, field.Invalid(fp, image, r).WithOrigin(string(RuleUpgradePath)))
	}
	for _, c := range j.Cautions {
		errs = append(errs, field.Invalid(fp, image, c).WithOrigin(string(RuleUpgradeReadiness)))
	}
	return errs
}

// mgrRelease is the Ceph release d's mgr container runs, by its image's
// tag, with the image's path and value; false when there is none to read.
func mgrRelease(d *appsv1.Deployment) (contract.CephVersion, *field.Path, string, bool) {
	i := containerIndex(d.Spec.Template.Spec.Containers, contract.MgrContainerName)
	if i < 0 {
		return contract.CephVersion{}, nil, "", false
	}
	image := d.Spec.Template.Spec.Containers[i].Image
	img, err := parseImage(image)
	if err != nil || img.Tag == "" || img.Tag == "latest" {
		return contract.CephVersion{}, nil, "", false
	}
	v, err := contract.ParseCephTag(img.Tag)
	if err != nil {
		return contract.CephVersion{}, nil, "", false
	}
	return v, podSpecPath.Child("containers").Index(i).Child("image"), image, true
}

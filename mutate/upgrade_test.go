// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// TestJudgeUpgrade: cephadm's rules and the known-bad paths, each at its
// boundary, and the cautions; each refusal names its rule and the fix.
func TestJudgeUpgrade(t *testing.T) {
	v := func(s string) contract.CephVersion {
		r, err := contract.ParseCephTag(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	at := func(osd string, mon int) *UpgradeFacts {
		return &UpgradeFacts{RequireOSDRelease: osd, MinMonRelease: mon, Health: "HEALTH_OK", Standbys: 1}
	}
	for name, tc := range map[string]struct {
		from, to string
		facts    *UpgradeFacts
		refusals []string // a fragment of each refusal, in order
		cautions []string
	}{
		"a Pacific cluster to Tentacle: too far, and both floors too low": {
			from: "16.2.15", to: "20.2.4", facts: at("pacific", 16),
			refusals: []string{
				"crosses 4 majors, and Ceph upgrades across at most 2 at a time: upgrade every daemon to 18 (reef) first",
				"min_mon_release is 16 (pacific), and Ceph 20.2.4 needs 18 (reef) or later: upgrade every mon to 18 (reef) first",
				`require_osd_release is "pacific", and Ceph 20.2.4 needs 18 (reef) or later: once every OSD runs 18 (reef) or later, raise it with ` + "`ceph osd require-osd-release reef`",
			},
		},
		"a Pacific cluster to Reef: two majors, admitted": {from: "16.2.15", to: "18.2.7", facts: at("pacific", 16)},
		"a Pacific cluster to Squid: three majors": {
			from: "16.2.15", to: "19.2.3", facts: at("pacific", 16),
			refusals: []string{"crosses 3 majors", "min_mon_release is 16 (pacific)", `require_osd_release is "pacific"`},
		},
		"a patch release": {from: "16.2.14", to: "16.2.15", facts: at("pacific", 16)},
		"the same release: nothing judged, even below the floors": {from: "20.2.4", to: "20.2.4", facts: at("octopus", 15)},
		"a major downgrade": {
			from: "18.2.7", to: "17.2.9", facts: at("reef", 18),
			refusals: []string{"Ceph 18.2.7 to 17.2.9 goes back a major release, which Ceph cannot do (the cluster has written 18 (reef)'s formats): keep 18 (reef) or later"},
		},
		"a patch downgrade within a stable release: Ceph allows it": {from: "18.2.7", to: "18.2.4", facts: at("reef", 18)},
		"back from stable to a pre-release": {
			from: "20.2.0", to: "20.1.1", facts: at("tentacle", 20),
			refusals: []string{"goes back from a stable release to a pre-release (20.1): keep 20.2 or later"},
		},
		"min_mon_release exactly the target less two": {from: "18.2.7", to: "20.2.5", facts: at("reef", 18)},
		"min_mon_release one below": {
			from: "18.2.7", to: "20.2.5", facts: at("reef", 17),
			refusals: []string{"min_mon_release is 17 (quincy), and Ceph 20.2.5 needs 18 (reef) or later"},
		},
		"require_osd_release one below": {
			from: "18.2.7", to: "20.2.5", facts: at("quincy", 18),
			refusals: []string{`require_osd_release is "quincy", and Ceph 20.2.5 needs 18 (reef) or later`},
		},
		"require_osd_release of a name not known": {
			from: "18.2.7", to: "20.2.5", facts: at("argonaut", 18),
			refusals: []string{`require_osd_release is "argonaut"`},
		},
		"Squid 19.2.6 to Tentacle before 20.2.4: known bad": {
			from: "19.2.6", to: "20.2.3", facts: at("squid", 19),
			refusals: []string{"Ceph 19.2.6 to 20.2.3 is a known-bad upgrade (ceph/ceph#71803): from Squid 19.2.6 the mgrs upgrade to a Tentacle before 20.2.4 but the other daemons may fail to; upgrade to 20.2.4 or later instead"},
		},
		"Squid 19.2.7 to 20.2.0: known bad too": {
			from: "19.2.7", to: "20.2.0", facts: at("squid", 19), refusals: []string{"ceph/ceph#71803"},
		},
		"Squid 19.2.5 to 20.2.3: not on the bad path": {from: "19.2.5", to: "20.2.3", facts: at("squid", 19)},
		"Squid 19.2.6 to 20.2.4: the fixed release":   {from: "19.2.6", to: "20.2.4", facts: at("squid", 19)},
		"not HEALTH_OK and no standby: admitted with cautions": {
			from: "18.2.4", to: "18.2.7", facts: &UpgradeFacts{RequireOSDRelease: "reef", MinMonRelease: 18, Health: "HEALTH_WARN"},
			cautions: []string{"the cluster is HEALTH_WARN: start a Ceph upgrade from HEALTH_OK", "the cluster has no standby mgr"},
		},
		"a release past the names known: the command says what to name": {
			from: "20.2.4", to: "24.2.0", facts: at("tentacle", 20),
			refusals: []string{"crosses 4 majors", "needs 22 or later: upgrade every mon to 22 first",
				"needs 22 or later: once every OSD runs 22 or later, raise it with `ceph osd require-osd-release <the name of release 22>`"},
		},
		"facts not read yet: the releases alone, no caution": {
			from: "16.2.15", to: "20.2.4",
			refusals: []string{"crosses 4 majors"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			j := JudgeUpgrade(v(tc.from), v(tc.to), tc.facts)
			check := func(kind string, got, want []string) {
				t.Helper()
				if len(got) != len(want) || slices.ContainsFunc(want, func(w string) bool {
					return !strings.Contains(got[slices.Index(want, w)], w)
				}) {
					t.Errorf("%s:\n got: %q\nwant: %q", kind, got, want)
				}
			}
			check("refusals", j.Refusals, tc.refusals)
			check("cautions", j.Cautions, tc.cautions)
		})
	}
}

// TestValidateRelease: the release guard on a write: refusals under
// images.upgradePath and cautions under images.upgradeReadiness, on the mgr
// image's path; nothing for a write that keeps the release, an image with no
// release, an exempt namespace, or a new mgr of a cluster never read; the
// readiness rule warns unless the policy says otherwise.
func TestValidateRelease(t *testing.T) {
	_, res := completeFixture(t, fixture{name: "fresh", input: "../manifests/examples/minimal-mgr.yaml", policy: DefaultPolicy()})
	old := res.Deployment
	with := func(image string) *appsv1.Deployment {
		d := old.DeepCopy()
		d.Spec.Template.Spec.Containers[containerIndex(d.Spec.Template.Spec.Containers, contract.MgrContainerName)].Image = image
		return d
	}
	pacific := &UpgradeFacts{RequireOSDRelease: "pacific", MinMonRelease: 16, Health: "HEALTH_OK", Standbys: 1,
		Mons: []contract.CephVersion{{Major: 16, Minor: 2, Patch: 15}}}
	info := func(f *UpgradeFacts) ClusterInfo { return ClusterInfo{Namespace: "rook-ceph", Upgrade: f} }
	exempt := DefaultPolicy()
	exempt.Images.UpgradePath.ExemptNamespaces = []string{"rook-ceph"}
	strictReadiness := DefaultPolicy()
	strictReadiness.Enforcement = map[Rule]Action{RuleUpgradeReadiness: ActionDeny}
	image := "spec.template.spec.containers[0].image"
	for name, tc := range map[string]struct {
		old, d   *appsv1.Deployment
		info     ClusterInfo
		p        *Policy
		origins  []string // each error's rule, in order
		deny     int      // errors the policy denies
		contains string
	}{
		"16.2 to 20.2.4 on a Pacific cluster": {old: with("quay.io/ceph/ceph:v16.2.15"), d: with("quay.io/ceph/ceph:v20.2.4"), info: info(pacific),
			origins: []string{"images.upgradePath", "images.upgradePath", "images.upgradePath"}, deny: 3, contains: "ceph osd require-osd-release reef"},
		"16.2 to 18.2.7 on a Pacific cluster":                   {old: with("quay.io/ceph/ceph:v16.2.15"), d: with("quay.io/ceph/ceph:v18.2.7"), info: info(pacific)},
		"a label change keeps the release, whatever the floors": {old: with("quay.io/ceph/ceph:v20.2.4"), d: with("quay.io/ceph/ceph:v20.2.4"), info: info(pacific)},
		"an exempt namespace":                                   {old: with("quay.io/ceph/ceph:v16.2.15"), d: with("quay.io/ceph/ceph:v20.2.4"), info: info(pacific), p: exempt},
		"an image that names no release":                        {old: with("quay.io/ceph/ceph:v16.2.15"), d: with("quay.io/ceph/ceph:latest"), info: info(pacific)},
		"a new mgr, from the oldest mon": {d: with("quay.io/ceph/ceph:v20.2.4"), info: info(pacific),
			origins: []string{"images.upgradePath", "images.upgradePath", "images.upgradePath"}, deny: 3, contains: "Ceph 16.2.15 to 20.2.4"},
		"a new mgr of a cluster never read": {d: with("quay.io/ceph/ceph:v20.2.4"), info: info(nil)},
		"no standby: warned by default": {old: with("quay.io/ceph/ceph:v16.2.14"), d: with("quay.io/ceph/ceph:v16.2.15"),
			info:    info(&UpgradeFacts{RequireOSDRelease: "pacific", MinMonRelease: 16, Health: "HEALTH_OK"}),
			origins: []string{"images.upgradeReadiness"}, contains: "no standby mgr"},
		"no standby: denied where the policy says so": {old: with("quay.io/ceph/ceph:v16.2.14"), d: with("quay.io/ceph/ceph:v16.2.15"), p: strictReadiness,
			info:    info(&UpgradeFacts{RequireOSDRelease: "pacific", MinMonRelease: 16, Health: "HEALTH_OK"}),
			origins: []string{"images.upgradeReadiness"}, deny: 1},
	} {
		t.Run(name, func(t *testing.T) {
			p := tc.p
			if p == nil {
				p = DefaultPolicy()
			}
			errs := ValidateRelease(tc.old, tc.d, tc.info, p)
			var origins []string
			for _, e := range errs {
				origins = append(origins, e.Origin)
				if e.Field != image {
					t.Errorf("error on %s, want %s: %v", e.Field, image, e)
				}
			}
			if !slices.Equal(origins, tc.origins) || len(p.Judge(errs).Deny) != tc.deny || !strings.Contains(fmt.Sprint(errs), tc.contains) {
				t.Errorf("rules %v (want %v), denied %d (want %d), want %q in: %v", origins, tc.origins, len(p.Judge(errs).Deny), tc.deny, tc.contains, errs)
			}
		})
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package releases

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
)

// TestPlan: a namespace with mgrs is read when its cluster answered its
// last call, or when it was found never called and without a CephRelease by
// this pass and the last one (a reconcile calls a new mgr's cluster within
// that interval: the keeper never races it to an unreachable one); not one
// whose breaker is open, nor one never called that has a record. Only a
// namespace without mgrs loses its CephRelease, and only in a namespace the
// install serves.
func TestPlan(t *testing.T) {
	mgrs := map[string][]string{"a": {"a"}, "dark": {"a", "b"}, "untried": {"a"}, "idle": {"a"}, "new": {"a"}}
	answered := func(ns string) bool { return ns == "a" }
	untried := func(ns string) bool { return ns == "untried" || ns == "idle" || ns == "new" }
	last := map[string]bool{"idle": true, "untried": true}
	got, now := plan(mgrs, []string{"a", "dark", "gone", "untried"}, nil, answered, untried, last)
	want := []step{{Namespace: "a", Read: true}, {Namespace: "gone", Delete: true}, {Namespace: "idle", Read: true}}
	if !slices.Equal(got, want) {
		t.Errorf("plan = %+v, want %+v", got, want)
	}
	if wantNow := map[string]bool{"idle": true, "new": true}; !maps.Equal(now, wantNow) {
		t.Errorf("untried now %v, want %v", now, wantNow)
	}
	// The next pass reads "new" if it is still uncalled.
	got, _ = plan(mgrs, []string{"a", "dark", "untried"}, nil, answered, untried, now)
	if want := []step{{Namespace: "a", Read: true}, {Namespace: "idle", Read: true}, {Namespace: "new", Read: true}}; !slices.Equal(got, want) {
		t.Errorf("second plan = %+v, want %+v", got, want)
	}
	// A namespaced install leaves another install's CephRelease alone.
	got, _ = plan(mgrs, []string{"a", "gone", "others", "untried"}, []string{"a", "gone", "dark", "untried", "idle", "new"}, answered, untried, last)
	if !slices.Equal(got, want) {
		t.Errorf("namespaced plan = %+v, want %+v", got, want)
	}
}

// TestStatusOf: the releases as versions, oldest first, and the read time to
// the second.
func TestStatusOf(t *testing.T) {
	now := time.Date(2026, 12, 7, 3, 0, 0, 600_000_000, time.UTC)
	st := statusOf(ceph.Facts{RequireOSDRelease: "pacific", MinMonRelease: "pacific", Health: "HEALTH_WARN", Standbys: 2,
		Mons: []ceph.Version{{Major: 16, Minor: 2, Patch: 9}, {Major: 16, Minor: 2, Patch: 15}}, Mgrs: []ceph.Version{{Major: 18, Minor: 2, Patch: 7}}}, now)
	if st.RequireOSDRelease != "pacific" || st.MinMonRelease != "pacific" || st.Health != "HEALTH_WARN" || st.StandbyMgrs != 2 ||
		!slices.Equal(st.MonReleases, []string{"16.2.9", "16.2.15"}) || !slices.Equal(st.MgrReleases, []string{"18.2.7"}) ||
		!st.ReadTime.Equal(&metav1.Time{Time: now.Truncate(time.Second)}) {
		t.Errorf("status %+v", st)
	}
}

// TestStatusOfFailedModules: failed modules sorted by name, each string cut
// to the schema's bound at a character's start, at most the schema's count.
func TestStatusOfFailedModules(t *testing.T) {
	long := strings.Repeat("é", 300) // 600 bytes
	st := statusOf(ceph.Facts{FailedModules: map[string]string{"rook": "x", "dashboard": long}}, time.Now())
	if len(st.FailedModules) != 2 || st.FailedModules[0].Name != "dashboard" || st.FailedModules[1] != (v1alpha1.FailedModule{Name: "rook", Error: "x"}) {
		t.Fatalf("failed modules %+v", st.FailedModules)
	}
	if e := st.FailedModules[0].Error; len(e) != 512 || !utf8.ValidString(e) {
		t.Errorf("error cut to %d bytes, valid UTF-8 %v; want 512, valid", len(e), utf8.ValidString(e))
	}
	many := map[string]string{}
	for i := range maxFailedModules + 5 {
		many[fmt.Sprintf("m%03d", i)] = ""
	}
	if n := len(statusOf(ceph.Facts{FailedModules: many}, time.Now()).FailedModules); n != maxFailedModules {
		t.Errorf("%d failed modules recorded of %d, want the bound %d", n, len(many), maxFailedModules)
	}
	if st := statusOf(ceph.Facts{}, time.Now()); st.FailedModules != nil {
		t.Errorf("a healthy cluster records failed modules %+v", st.FailedModules)
	}
}

// TestStatusOfInsecureMgrKeys: only mgr entities are recorded (the others
// are no key of the controller's), at most the schema's count.
func TestStatusOfInsecureMgrKeys(t *testing.T) {
	st := statusOf(ceph.Facts{InsecureKeys: []string{"mgr.a", "mgr.b", "mon.", "osd.0"}}, time.Now())
	if !slices.Equal(st.InsecureMgrKeys, []string{"mgr.a", "mgr.b"}) {
		t.Errorf("insecure mgr keys %v, want [mgr.a mgr.b]", st.InsecureMgrKeys)
	}
	var many []string
	for i := range maxInsecureMgrKeys + 3 {
		many = append(many, fmt.Sprintf("mgr.m%03d", i))
	}
	if n := len(statusOf(ceph.Facts{InsecureKeys: many}, time.Now()).InsecureMgrKeys); n != maxInsecureMgrKeys {
		t.Errorf("%d recorded of %d, want the bound %d", n, len(many), maxInsecureMgrKeys)
	}
	if st := statusOf(ceph.Facts{InsecureKeys: []string{"mon."}}, time.Now()); st.InsecureMgrKeys != nil {
		t.Errorf("recorded %v with no mgr key insecure", st.InsecureMgrKeys)
	}
}

// TestDue: written when a fact changes or the last write is Refresh old, at
// the boundary; not when only the read time moved.
func TestDue(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	at := func(d time.Duration, health string) v1alpha1.CephReleaseStatus {
		return v1alpha1.CephReleaseStatus{RequireOSDRelease: "reef", MinMonRelease: "reef", MonReleases: []string{"18.2.7"},
			Health: health, StandbyMgrs: 1, ReadTime: metav1.NewTime(t0.Add(d))}
	}
	refresh := 10 * time.Minute
	for name, tc := range map[string]struct {
		have, want v1alpha1.CephReleaseStatus
		due        bool
	}{
		"nothing changed, a minute on":     {at(0, "HEALTH_OK"), at(time.Minute, "HEALTH_OK"), false},
		"nothing changed, just under":      {at(0, "HEALTH_OK"), at(refresh-time.Second, "HEALTH_OK"), false},
		"nothing changed, refresh on":      {at(0, "HEALTH_OK"), at(refresh, "HEALTH_OK"), true},
		"the health changed, a second on":  {at(0, "HEALTH_OK"), at(time.Second, "HEALTH_WARN"), true},
		"never written (a zero read time)": {v1alpha1.CephReleaseStatus{}, at(0, "HEALTH_OK"), true},
	} {
		t.Run(name, func(t *testing.T) {
			if got := due(tc.have, tc.want, refresh); got != tc.due {
				t.Errorf("due = %v, want %v", got, tc.due)
			}
		})
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package contract

import "testing"

func TestParseCephTag(t *testing.T) {
	for tag, want := range map[string]CephVersion{
		"v13.2.3-20190410": {13, 2, 3},
		"v16.2.15":         {16, 2, 15},
		"v17":              {17, 0, 0},
		"18.2":             {18, 2, 0},
	} {
		got, err := ParseCephTag(tag)
		if err != nil || got != want {
			t.Errorf("ParseCephTag(%q) = %v, %v; want %v", tag, got, err, want)
		}
	}
	for _, bad := range []string{"latest", "", "v1.2.3.4", "main-devel", "v-1"} {
		if _, err := ParseCephTag(bad); err == nil {
			t.Errorf("ParseCephTag(%q) accepted", bad)
		}
	}
}

// TestCephVersionOrder: a minimum is inclusive, and each part of the version
// decides only when the parts before it are equal.
func TestCephVersionOrder(t *testing.T) {
	for _, tc := range []struct {
		a, b    CephVersion
		atLeast bool
	}{
		{CephVersion{16, 2, 0}, CephVersion{16, 2, 0}, true},
		{CephVersion{16, 1, 9}, CephVersion{16, 2, 0}, false},
		{CephVersion{16, 2, 0}, CephVersion{16, 1, 9}, true},
		{CephVersion{16, 2, 14}, CephVersion{16, 2, 15}, false},
		{CephVersion{16, 2, 15}, CephVersion{16, 2, 14}, true},
		{CephVersion{15, 9, 9}, CephVersion{16, 0, 0}, false},
		{CephVersion{17, 0, 0}, CephVersion{16, 9, 9}, true},
	} {
		if got := tc.a.AtLeast(tc.b); got != tc.atLeast {
			t.Errorf("%v >= %v = %v, want %v", tc.a, tc.b, got, tc.atLeast)
		}
	}
}

// TestIn: a window holds its first release and what follows, up to its
// second, which it does not hold.
func TestIn(t *testing.T) {
	for v, want := range map[CephVersion]bool{
		{20, 2, 1}: false, {20, 2, 2}: true, {20, 2, 4}: true, {20, 2, 5}: false, {19, 2, 3}: false, {21, 2, 3}: false,
	} {
		if got := v.In(RookModuleBroken); got != want {
			t.Errorf("%s in the rook module's broken window: %v, want %v", v, got, want)
		}
	}
}

// TestReleaseMajor: every release's name reads back as its major, and a name
// not known is said so.
func TestReleaseMajor(t *testing.T) {
	for major, name := range ReleaseNames {
		if got, ok := ReleaseMajor(name); !ok || got != major {
			t.Errorf("ReleaseMajor(%q) = %d, %v; want %d", name, got, ok, major)
		}
	}
	for _, name := range []string{"", "argonaut", "Pacific"} {
		if got, ok := ReleaseMajor(name); ok {
			t.Errorf("ReleaseMajor(%q) = %d, true; want not known", name, got)
		}
	}
}

func TestCompare(t *testing.T) {
	a, b := CephVersion{16, 2, 15}, CephVersion{20, 2, 4}
	if a.Compare(b) != -1 || b.Compare(a) != 1 || a.Compare(a) != 0 || (CephVersion{20, 2, 5}).Compare(b) != 1 {
		t.Error("Compare does not order releases by major, minor, patch")
	}
}

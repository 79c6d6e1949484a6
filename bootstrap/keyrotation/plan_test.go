// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package keyrotation

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
)

var now = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// TestDue: each trigger at its boundary, and never for a key not owned.
func TestDue(t *testing.T) {
	day := 24 * time.Hour
	for name, tc := range map[string]struct {
		p    Policy
		k    Key
		want string // a part of the reason; "" not due
	}{
		"nothing asked":                  {Policy{}, Key{Owned: true, Since: now.Add(-1000 * day)}, ""},
		"not owned":                      {Policy{Generation: 5}, Key{Generation: 1, Insecure: true}, ""},
		"generation above":               {Policy{Generation: 2}, Key{Owned: true}, "generation 2 (the key is generation 1)"},
		"generation equal":               {Policy{Generation: 2}, Key{Owned: true, Generation: 2}, ""},
		"generation 1 of a new key":      {Policy{Generation: 1}, Key{Owned: true}, ""},
		"generation below":               {Policy{Generation: 2}, Key{Owned: true, Generation: 3}, ""},
		"age reached":                    {Policy{RotateAfter: 90 * day}, Key{Owned: true, Since: now.Add(-90 * day)}, "older than the policy's rotateAfter"},
		"age a second short":             {Policy{RotateAfter: 90 * day}, Key{Owned: true, Since: now.Add(-90*day + time.Second)}, ""},
		"age unknown":                    {Policy{RotateAfter: time.Hour}, Key{Owned: true}, ""},
		"insecure":                       {Policy{}, Key{Owned: true, Insecure: true}, "insecure type (AUTH_INSECURE_SERVICE_KEY_TYPE)"},
		"insecure, aes256k asked":        {Policy{KeyType: "aes256k"}, Key{Owned: true, Insecure: true}, "insecure type"},
		"insecure, the policy keeps aes": {Policy{KeyType: "aes"}, Key{Owned: true, Insecure: true}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			got := Due(tc.p, tc.k, now)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("Due = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPlan: a due key is rotated to the next generation (at least the
// policy's) unless the cluster cannot, a mgr rolls out, or it is the active
// mgr's while a standby's is due.
func TestPlan(t *testing.T) {
	due := Policy{Generation: 2}
	standbyDue, standbyDone := Key{ID: "b", Owned: true}, Key{ID: "b", Owned: true, Generation: 2}
	for name, tc := range map[string]struct {
		p    Policy
		k    Key
		c    Cluster
		want Step
	}{
		"not due": {due, Key{ID: "a", Owned: true, Generation: 2}, Cluster{Cannot: "old", Rolling: "b"}, Step{}},
		"standby": {due, Key{ID: "b", Owned: true}, Cluster{Active: "a", Others: []Key{{ID: "a", Owned: true}}},
			Step{Due: "the policy asks for key generation 2 (the key is generation 1)", Generation: 2}},
		"releases not read": {due, Key{ID: "a", Owned: true}, Cluster{Unread: true, Cannot: "x"},
			Step{Due: "the policy asks for key generation 2 (the key is generation 1)", Wait: "the controller has not read the cluster's releases yet"}},
		"cannot": {due, Key{ID: "a", Owned: true}, Cluster{Cannot: "mon a runs 16.2.15"},
			Step{Due: "the policy asks for key generation 2 (the key is generation 1)", Blocked: "mon a runs 16.2.15"}},
		"a mgr rolls out": {due, Key{ID: "a", Owned: true}, Cluster{Rolling: "b"},
			Step{Due: "the policy asks for key generation 2 (the key is generation 1)", Wait: "mgr b is rolling out"}},
		"active, a standby due": {due, Key{ID: "a", Owned: true}, Cluster{Active: "a", Others: []Key{standbyDue, {ID: "c", Owned: true, Generation: 2}}},
			Step{Due: "the policy asks for key generation 2 (the key is generation 1)", Wait: "the standbys' keys first: mgr b"}},
		"active, standbys done": {due, Key{ID: "a", Owned: true}, Cluster{Active: "a", Others: []Key{standbyDone}},
			Step{Due: "the policy asks for key generation 2 (the key is generation 1)", Generation: 2}},
		"active, a standby not ours": {due, Key{ID: "a", Owned: true}, Cluster{Active: "a", Others: []Key{{ID: "b"}}},
			Step{Due: "the policy asks for key generation 2 (the key is generation 1)", Generation: 2}},
		"by age: the next generation": {Policy{Generation: 2, RotateAfter: time.Hour}, Key{ID: "a", Owned: true, Generation: 4, Since: now.Add(-2 * time.Hour)}, Cluster{},
			Step{Due: "the key is older than the policy's rotateAfter (1h0m0s)", Generation: 5}},
		"to the policy's generation": {Policy{Generation: 7}, Key{ID: "a", Owned: true, Generation: 2}, Cluster{},
			Step{Due: "the policy asks for key generation 7 (the key is generation 2)", Generation: 7}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Plan(tc.p, tc.k, tc.c, now); got != tc.want {
				t.Errorf("Plan =\n%+v, want\n%+v", got, tc.want)
			}
		})
	}
}

// TestPolicyOf: the fields as written; no rotateAfter is never by age; a
// namespace not named (when any is) keeps only the key type.
func TestPolicyOf(t *testing.T) {
	k := v1alpha1.CephxKeys{Generation: 3, KeyType: "aes", RotateAfter: &metav1.Duration{Duration: time.Hour}}
	if got := PolicyOf(k, "ceph-a"); got != (Policy{Generation: 3, RotateAfter: time.Hour, KeyType: "aes"}) {
		t.Errorf("PolicyOf = %+v", got)
	}
	if got := PolicyOf(v1alpha1.CephxKeys{}, "ceph-a"); got != (Policy{}) {
		t.Errorf("PolicyOf(empty) = %+v", got)
	}
	k.Namespaces = []string{"ceph-a"}
	if got := PolicyOf(k, "ceph-a"); got != (Policy{Generation: 3, RotateAfter: time.Hour, KeyType: "aes"}) {
		t.Errorf("PolicyOf(named) = %+v", got)
	}
	if got := PolicyOf(k, "ceph-b"); got != (Policy{KeyType: "aes"}) {
		t.Errorf("PolicyOf(not named) = %+v, want the key type alone", got)
	}
}

// TestReportedInsecure: only a read after the key was made says it is
// insecure (the read time and the key's time are both to the second).
func TestReportedInsecure(t *testing.T) {
	for name, tc := range map[string]struct {
		listed      bool
		read, since time.Time
		want        bool
	}{
		"listed, read after":           {true, now, now.Add(-time.Second), true},
		"listed, read the same second": {true, now, now, false},
		"listed, read before":          {true, now.Add(-time.Minute), now, false},
		"listed, key time unknown":     {true, now, time.Time{}, true},
		"not listed":                   {false, now, now.Add(-time.Hour), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := ReportedInsecure(tc.listed, tc.read, tc.since); got != tc.want {
				t.Errorf("ReportedInsecure = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestGenerationOf: a number, else 0.
func TestGenerationOf(t *testing.T) {
	for v, want := range map[string]int64{"": 0, "1": 1, "42": 42, "-3": 0, "x": 0, "99999999999999999999": 0} {
		if got := GenerationOf(v); got != want {
			t.Errorf("GenerationOf(%q) = %d, want %d", v, got, want)
		}
	}
}

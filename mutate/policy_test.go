// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"strings"
	"testing"
)

func TestParsePolicy(t *testing.T) {
	cases := map[string]struct {
		yaml    string
		wantErr string
	}{
		"empty body gets defaults":     {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\n"},
		"unknown field":                {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nallowPrivilegd: true\n", wantErr: `unknown field "allowPrivilegd"`},
		"wrong version":                {yaml: "apiVersion: mgr.ceph.rook.io/v2\nkind: Policy\n", wantErr: "apiVersion/kind must be"},
		"missing version":              {yaml: "allowPrivileged: true\n", wantErr: "apiVersion/kind must be"},
		"bad minimum":                  {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nimages:\n  minimumCephVersion: reef\n", wantErr: "images.minimumCephVersion"},
		"relative data dir":            {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\ndataDirHostPath: var/lib\n", wantErr: "dataDirHostPath"},
		"sidecar without image":        {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nsidecars:\n  x: {}\n", wantErr: "sidecars[x].image"},
		"exemption":                    {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nexemptions:\n- namespace: legacy\n  names: [rook-ceph-mgr-x]\n"},
		"exemption of no namespace":    {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nexemptions:\n- names: [rook-ceph-mgr-x]\n", wantErr: "exemptions[0].namespace"},
		"exemption of a bad name":      {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nexemptions:\n- namespace: a\n  names: [Bad_Name]\n", wantErr: "exemptions[0].names[0]"},
		"module choices":               {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nmoduleChoices: [prometheus, diskprediction_local]\n"},
		"a module choice with a comma": {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nmoduleChoices: [\"prometheus,nfs\"]\n", wantErr: "moduleChoices[0]"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := ParsePolicy([]byte(tc.yaml))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if p.DefaultImage != DefaultPolicy().DefaultImage || !*p.ServerAddrInitContainers.Enabled {
					t.Errorf("defaults not applied: %+v", p)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestExempts(t *testing.T) {
	p := DefaultPolicy()
	p.Exemptions = []Exemption{{Namespace: "legacy", Names: []string{"rook-ceph-mgr-x"}}, {Namespace: "whole"}}
	for name, tc := range map[string]struct {
		ns, name string
		want     bool
	}{
		"named":                   {"legacy", "rook-ceph-mgr-x", true},
		"another name":            {"legacy", "rook-ceph-mgr-y", false},
		"a name sharing a prefix": {"legacy", "rook-ceph-mgr-xy", false},
		"same name elsewhere":     {"rook-ceph", "rook-ceph-mgr-x", false},
		"whole namespace":         {"whole", "rook-ceph-mgr-a", true},
		"namespace prefix":        {"wholesale", "rook-ceph-mgr-a", false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := p.Exempts(tc.ns, tc.name); got != tc.want {
				t.Errorf("Exempts(%s, %s) = %v", tc.ns, tc.name, got)
			}
			if got := p.Governs(tc.ns, tc.name, true, false); got == tc.want {
				t.Errorf("Governs(%s, %s) = %v", tc.ns, tc.name, got)
			}
		})
	}
	if p.Governs("rook-ceph", "rook-ceph-mgr-a", true, true) || p.Governs("rook-ceph", "web", false, false) || !p.Governs("rook-ceph", "rook-ceph-mgr-a", true, false) {
		t.Error("a live Rook owner or a non-mgr is governed, or a plain mgr is not")
	}
}

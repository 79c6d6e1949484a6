// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rook-mgr/mgr-webhook/contract"
)

func TestParsePolicy(t *testing.T) {
	cases := map[string]struct {
		yaml    string
		wantErr string
	}{
		"empty body gets defaults":      {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\n"},
		"unknown field":                 {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nallowPrivilegd: true\n", wantErr: `unknown field "allowPrivilegd"`},
		"wrong version":                 {yaml: "apiVersion: mgr.ceph.rook.io/v2\nkind: Policy\n", wantErr: "apiVersion/kind must be"},
		"missing version":               {yaml: "allowPrivileged: true\n", wantErr: "apiVersion/kind must be"},
		"bad minimum":                   {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nimages:\n  minimumCephVersion: reef\n", wantErr: "images.minimumCephVersion"},
		"relative data dir":             {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\ndataDirHostPath: var/lib\n", wantErr: "dataDirHostPath"},
		"sidecar without image":         {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nsidecars:\n  x: {}\n", wantErr: "sidecars[x].image"},
		"exemption":                     {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nexemptions:\n- namespace: legacy\n  names: [rook-ceph-mgr-x]\n"},
		"exemption of no namespace":     {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nexemptions:\n- names: [rook-ceph-mgr-x]\n", wantErr: "exemptions[0].namespace"},
		"exemption of a bad name":       {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nexemptions:\n- namespace: a\n  names: [Bad_Name]\n", wantErr: "exemptions[0].names[0]"},
		"module choices":                {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nmoduleChoices: [prometheus, diskprediction_local]\n"},
		"a module choice with a comma":  {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nmoduleChoices: [\"prometheus,nfs\"]\n", wantErr: "moduleChoices[0]"},
		"a credential in moduleOptions": {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nmoduleOptions: {influx: {password: hunter2}}\n", wantErr: "moduleOptions[influx][password]: Forbidden: an option that may hold a credential"},
		"a module in upper case":        {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nmodules: [prometheus, Dashboard]\n", wantErr: "modules[1]"},
		"module options":                {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nmoduleOptions: {prometheus: {scrape_interval: \"20\"}, balancer: {mode: upmap}}\n"},
		"a per-mgr module option": {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nmoduleOptions: {prometheus: {server_port: \"9284\"}}\n",
			wantErr: "moduleOptions[prometheus][server_port]: Forbidden: prometheus's server_port is set per mgr by the controller"},
		"the dashboard's ssl":         {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nmoduleOptions: {dashboard: {ssl: \"false\"}}\n", wantErr: "moduleOptions[dashboard][ssl]"},
		"a module option's name":      {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nmoduleOptions: {balancer: {Mode: upmap}}\n", wantErr: "moduleOptions[balancer][Mode]"},
		"a module's name":             {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nmoduleOptions: {\"mgr/balancer\": {mode: upmap}}\n", wantErr: "moduleOptions[mgr/balancer]"},
		"a value of two lines":        {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nmoduleOptions: {balancer: {mode: \"upmap\\nx\"}}\n", wantErr: "moduleOptions[balancer][mode]: Invalid value"},
		"an empty value":              {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nmoduleOptions: {balancer: {mode: \"\"}}\n", wantErr: "1 to 256 characters"},
		"key rotation":                {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\ncephxKeys: {generation: 2, rotateAfter: 1h, keyType: aes256k}\n"},
		"rotateAfter under 1h":        {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\ncephxKeys: {rotateAfter: 59m59s}\n", wantErr: "cephxKeys.rotateAfter: Invalid value: \"59m59s\": must be at least 1h"},
		"a key type":                  {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\ncephxKeys: {keyType: des}\n", wantErr: "cephxKeys.keyType: Unsupported value: \"des\""},
		"a namespace of key rotation": {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\ncephxKeys: {generation: 2, namespaces: [Ceph_A]}\n", wantErr: "cephxKeys.namespaces[0]"},
		"a negative generation":       {yaml: "apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\ncephxKeys: {generation: -1}\n", wantErr: "cephxKeys.generation"},
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

// TestPolicyFromSpec: a MgrPolicy's spec is defaulted and validated as a
// policy file is, its errors name the spec's fields, and the hash names what
// the policy says, not how it was written.
func TestPolicyFromSpec(t *testing.T) {
	p, errs := PolicyFromSpec(&PolicySpec{}, field.NewPath("spec"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if p.Hash() != DefaultPolicy().Hash() {
		t.Errorf("an empty spec hashes %s, the built-in policy %s", p.Hash(), DefaultPolicy().Hash())
	}
	explicit := DefaultPolicy().PolicySpec
	if q, _ := PolicyFromSpec(&explicit, field.NewPath("spec")); q.Hash() != p.Hash() {
		t.Errorf("the defaults written out hash %s, left out %s", q.Hash(), p.Hash())
	}
	stricter := PolicySpec{Images: ImagePolicy{MinimumCephVersion: "18.0.0"}}
	if q, _ := PolicyFromSpec(&stricter, field.NewPath("spec")); q.Hash() == p.Hash() {
		t.Error("a stricter policy hashes like the default")
	}
	_, errs = PolicyFromSpec(&PolicySpec{DefaultImage: "quay.io/CEPH/ceph:v19"}, field.NewPath("spec"))
	if len(errs) != 1 || errs[0].Field != "spec.defaultImage" {
		t.Fatalf("errors = %v, want one naming spec.defaultImage", errs)
	}
	in := PolicySpec{Modules: []string{"prometheus"}}
	q, _ := PolicyFromSpec(&in, field.NewPath("spec"))
	q.Modules[0] = "changed"
	if in.Modules[0] != "prometheus" {
		t.Error("the policy shares the spec's slices")
	}
}

// TestDefaultMinimumIsOldestMaintained: the built-in policy, and the
// in-API-server check when no MgrPolicy says otherwise, admit exactly the
// releases Ceph still maintains; the refusal of an older one says how a site
// keeps it.
func TestDefaultMinimumIsOldestMaintained(t *testing.T) {
	if got := DefaultPolicy().Images.MinimumCephVersion; got != contract.OldestMaintained.String() {
		t.Errorf("the built-in minimum is %s, want contract.OldestMaintained %s", got, contract.OldestMaintained)
	}
	check, err := os.ReadFile("../manifests/base/policy/check.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := "minimumCephVersion.orValue('" + contract.OldestMaintained.String() + "')"; !strings.Contains(string(check), want) {
		t.Errorf("check.yaml's default minimum is not %s (want %q in it)", contract.OldestMaintained, want)
	}
	m := contract.OldestMaintained
	below := contract.CephVersion{Major: m.Major, Minor: m.Minor - 1, Patch: 9}
	for image, wantErr := range map[string]bool{
		"quay.io/ceph/ceph:v" + m.String():     false,
		"quay.io/ceph/ceph:v" + below.String(): true,
		"quay.io/ceph/ceph:v16.2.15":           true,
	} {
		errs := validateImage(field.NewPath("image"), image, DefaultPolicy())
		if (len(errs) > 0) != wantErr {
			t.Errorf("%s: errors %v, want refused %v", image, errs, wantErr)
			continue
		}
		if wantErr && !strings.Contains(errs.ToAggregate().Error(), "lowers images.minimumCephVersion in its policy") {
			t.Errorf("%s: the refusal %v does not say how a site keeps an end-of-life release", image, errs)
		}
	}
	lowered := DefaultPolicy()
	lowered.Images.MinimumCephVersion = "16.2.0"
	if errs := validateImage(field.NewPath("image"), "quay.io/ceph/ceph:v16.2.15", lowered); len(errs) > 0 {
		t.Errorf("a policy that lowers the minimum still refuses Pacific: %v", errs)
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/badspec"
)

// completedMinimal returns the shipped example, completed with the default policy.
func completedMinimal(t *testing.T) *appsv1.Deployment {
	t.Helper()
	in := loadDeployment(t, "../manifests/examples/minimal-mgr.yaml")
	res, errs := Complete(in, testClusters["rook-ceph"], DefaultPolicy())
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return res.Deployment
}

func mgrContainer(d *appsv1.Deployment) *corev1.Container {
	return &d.Spec.Template.Spec.Containers[containerIndex(d.Spec.Template.Spec.Containers, contract.MgrContainerName)]
}

func setArg(c *corev1.Container, flag, value string) {
	for i, a := range c.Args {
		if flagKey(a) == flag {
			c.Args[i] = flag + "=" + value
		}
	}
}

// TestValidateRules runs the bad-spec corpus (testdata/badspec/violations.yaml):
// each case breaks one rule and exactly that rule's field is reported, with
// the error type a user can act on; a case at a rule's boundary is admitted.
func TestValidateRules(t *testing.T) {
	cases, err := badspec.Load("testdata/badspec/violations.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			d, err := tc.Apply(completedMinimal(t))
			if err != nil {
				t.Fatal(err)
			}
			p := corpusPolicy(t, tc)
			errs := Validate(d, testClusters["rook-ceph"], p)
			if tc.Field == "" {
				if len(errs) > 0 {
					t.Fatalf("refused: %v", errs.ToAggregate())
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("got %d errors, want exactly 1: %v", len(errs), errs.ToAggregate())
			}
			e := errs[0]
			if e.Field != tc.Field || string(e.Type) != tc.Type || !strings.Contains(e.Error(), tc.Words) {
				t.Errorf("got %s (%s), want field %s type %s mentioning %q", e.Error(), e.Type, tc.Field, tc.Type, tc.Words)
			}
		})
	}
}

// corpusPolicy is the policy a corpus case is judged by.
func corpusPolicy(t *testing.T, tc badspec.Case) *Policy {
	t.Helper()
	var spec PolicySpec
	if err := json.Unmarshal(tc.PolicyJSON(), &spec); err != nil {
		t.Fatal(err)
	}
	p, errs := PolicyFromSpec(&spec, nil)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return p
}

func TestValidatePolicyAllows(t *testing.T) {
	d := completedMinimal(t)
	d.Annotations = map[string]string{contract.AnnotationModules: "prometheus"}
	mgrContainer(d).SecurityContext = &corev1.SecurityContext{Privileged: ptrTo(true)}
	mgrContainer(d).Image = "quay.io/ceph/ceph:latest"
	d.Spec.Template.Spec.HostNetwork = true
	p := DefaultPolicy()
	p.AllowPrivileged, p.AllowHostNetwork, p.Images.AllowLatest = true, true, true
	p.ModuleChoices = []string{"dashboard", "prometheus"}
	if errs := Validate(d, testClusters["rook-ceph"], p); len(errs) > 0 {
		t.Errorf("a policy allowing privileged, hostNetwork, latest and prometheus still refused: %v", errs.ToAggregate())
	}
}

func TestValidateUpdateImmutables(t *testing.T) {
	info, p := testClusters["rook-ceph"], DefaultPolicy()
	old := completedMinimal(t)
	if errs := ValidateUpdate(old, old.DeepCopy(), info, p); len(errs) > 0 {
		t.Fatalf("an unchanged update was refused: %v", errs.ToAggregate())
	}

	renamed := old.DeepCopy()
	renamed.Labels[contract.LabelMgrID] = "b"
	errs := ValidateUpdate(old, renamed, info, p)
	if !hasError(errs, "metadata.labels[mgr]", field.ErrorTypeForbidden) {
		t.Errorf("changing the mgr id: got %v, want a Forbidden on metadata.labels[mgr]", errs.ToAggregate())
	}

	moved := old.DeepCopy()
	setArg(mgrContainer(moved), "--fsid", "47913c99-d1ed-4a9b-bd55-2b49490b1229")
	errs = ValidateUpdate(old, moved, info, p)
	if !hasError(errs, "spec.template.spec.containers[mgr].args", field.ErrorTypeForbidden) {
		t.Errorf("changing the fsid: got %v, want a Forbidden on the mgr args", errs.ToAggregate())
	}
}

// TestValidateUpdateRatchets: an update is judged on what it changes: a
// violation the old object has already is not reported again, a new one is.
func TestValidateUpdateRatchets(t *testing.T) {
	info, p := testClusters["rook-ceph"], DefaultPolicy()
	old := completedMinimal(t)
	old.Spec.Template.Spec.HostNetwork = true // admitted before the policy forbade it
	relabelled := old.DeepCopy()
	relabelled.Labels["team"] = "storage"
	if errs := ValidateUpdate(old, relabelled, info, p); len(errs) > 0 {
		t.Errorf("an update keeping an old violation was refused: %v", errs.ToAggregate())
	}
	if errs := Validate(relabelled, info, p); !hasError(errs, "spec.template.spec.hostNetwork", field.ErrorTypeForbidden) {
		t.Fatalf("the fixture is not a violation: %v", errs.ToAggregate())
	}
	worse := relabelled.DeepCopy()
	worse.Spec.Replicas = ptrTo[int32](2)
	errs := ValidateUpdate(old, worse, info, p)
	if len(errs) != 1 || !hasError(errs, "spec.replicas", field.ErrorTypeInvalid) {
		t.Errorf("a new violation: got %v, want only spec.replicas", errs.ToAggregate())
	}
}

func hasError(errs field.ErrorList, path string, typ field.ErrorType) bool {
	for _, e := range errs {
		if e.Field == path && e.Type == typ {
			return true
		}
	}
	return false
}

func TestCompleteRefusesWhatItCannotComplete(t *testing.T) {
	cases := map[string]struct {
		edit      func(d *appsv1.Deployment)
		wantField string
	}{
		"no mgr label":            {func(d *appsv1.Deployment) { delete(d.Labels, contract.LabelMgrID) }, "metadata.labels[mgr]"},
		"bad mgr id":              {func(d *appsv1.Deployment) { d.Labels[contract.LabelMgrID] = "-" }, "metadata.labels[mgr]"},
		"container not named mgr": {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Name = "ceph-mgr" }, "spec.template.spec.containers"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := loadDeployment(t, "../manifests/examples/minimal-mgr.yaml")
			tc.edit(d)
			_, errs := Complete(d, testClusters["rook-ceph"], DefaultPolicy())
			if len(errs) != 1 || errs[0].Field != tc.wantField {
				t.Errorf("got %v, want one error on %s", errs.ToAggregate(), tc.wantField)
			}
		})
	}
}

// TestOneErrorPerMistake: an image written once, on the mgr container, is
// refused once, although Complete copies it into both init containers; an
// init container's own, different image is still judged.
func TestOneErrorPerMistake(t *testing.T) {
	cases := map[string]struct {
		mgrImage, initImage string // initImage "": what Complete derives
		want                []string
	}{
		"image refused on the mgr only": {"busybox:latest", "", []string{"spec.template.spec.containers[0].image"}},
		"init image of its own":         {"quay.io/ceph/ceph:v19.2.3", "busybox:1.36", []string{"spec.template.spec.initContainers[1].image"}},
		"both wrong, differently":       {"busybox:latest", "quay.io/ceph/ceph:v12.2.13", []string{"spec.template.spec.containers[0].image", "spec.template.spec.initContainers[1].image"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := loadDeployment(t, "../manifests/examples/minimal-mgr.yaml")
			mgrContainer(in).Image = tc.mgrImage
			res, errs := Complete(in, testClusters["rook-ceph"], DefaultPolicy())
			if len(errs) > 0 {
				t.Fatal(errs.ToAggregate())
			}
			d := res.Deployment
			if tc.initImage != "" {
				d.Spec.Template.Spec.InitContainers[1].Image = tc.initImage
			}
			var got []string
			for _, e := range Validate(d, testClusters["rook-ceph"], DefaultPolicy()) {
				got = append(got, e.Field)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors on %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWarningsOnlyOnSurprises: completing what users write (a minimal mgr,
// as typed or as the API server defaulted it) warns about nothing, so
// kubectl --warnings-as-errors passes; a value of the user's that Complete
// replaces is a warning.
func TestWarningsOnlyOnSurprises(t *testing.T) {
	userImageEnv := func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "CONTAINER_IMAGE", Value: "quay.io/ceph/ceph:v17.2.0"}}
	}
	userInitImage := func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "init-set-dashboard-server-addr", Image: "quay.io/ceph/ceph:v17.2.0"}}
	}
	// A mgr completed before, then given a new image (as kubectl apply of
	// a minimal manifest would): the values derived from the old one
	// follow without a word.
	upgraded := func(d *appsv1.Deployment) {
		res, errs := Complete(d, testClusters["rook-ceph"], DefaultPolicy())
		if len(errs) > 0 {
			t.Fatal(errs.ToAggregate())
		}
		StampInPlace(res.Deployment, Stamp{Version: "v1", Policy: DefaultPolicy().Hash()})
		*d = *res.Deployment
		d.Spec.Template.Spec.Containers[0].Image = "quay.io/ceph/ceph:v19.2.0"
	}
	cases := map[string]struct {
		file string
		edit func(*appsv1.Deployment)
		want []string // a substring of each warning
	}{
		"minimal":                      {file: "../manifests/examples/minimal-mgr.yaml"},
		"API-defaulted strategy":       {file: "testdata/api-defaulted.yaml"},
		"no container (default image)": {file: "testdata/no-container.yaml"},
		"a strategy of the user's":     {file: "testdata/user-strategy.yaml", want: []string{"spec.strategy: RollingUpdate"}},
		"a CONTAINER_IMAGE of the user's": {file: "../manifests/examples/minimal-mgr.yaml", edit: userImageEnv,
			want: []string{`env CONTAINER_IMAGE of container mgr: "quay.io/ceph/ceph:v17.2.0" replaced by`}},
		"an init container image of the user's": {file: "../manifests/examples/minimal-mgr.yaml", edit: userInitImage,
			want: []string{`spec.template.spec.initContainers[init-set-dashboard-server-addr].image: "quay.io/ceph/ceph:v17.2.0" replaced by`}},
		"a completed mgr's new image": {file: "../manifests/examples/minimal-mgr.yaml", edit: upgraded},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := loadDeployment(t, tc.file)
			if tc.edit != nil {
				tc.edit(d)
			}
			res, errs := Complete(d, testClusters["rook-ceph"], DefaultPolicy())
			if len(errs) > 0 {
				t.Fatal(errs.ToAggregate())
			}
			if len(res.Warnings) != len(tc.want) {
				t.Fatalf("warnings %q, want %d", res.Warnings, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(res.Warnings[i], w) {
					t.Errorf("warning %q, want one with %q", res.Warnings[i], w)
				}
			}
		})
	}
}

// TestRatchetComparesTheWholeValue: a grandfathered violation stays
// writable as it is, but cannot be repointed: a hostPath outside the log
// directory cannot move to another path, a foreign image cannot move to
// another tag of its repository.
func TestRatchetComparesTheWholeValue(t *testing.T) {
	info := testClusters["rook-ceph"]
	withHostPath := func(p string) *appsv1.Deployment {
		d := completedMinimal(t)
		d.Spec.Template.Spec.Volumes = append(d.Spec.Template.Spec.Volumes, corev1.Volume{Name: "host",
			VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p}}})
		return d
	}
	withImage := func(img string) *appsv1.Deployment {
		d := completedMinimal(t)
		mgrContainer(d).Image = img
		return d
	}
	for name, tc := range map[string]struct {
		old, d *appsv1.Deployment
		field  string // "" when admitted
	}{
		"hostPath kept":          {withHostPath("/var/lib/rook/exporter"), withHostPath("/var/lib/rook/exporter"), ""},
		"hostPath repointed":     {withHostPath("/var/lib/rook/exporter"), withHostPath("/"), "spec.template.spec.volumes[5].hostPath.path"},
		"foreign image kept":     {withImage("example.com/ceph:v17.2.0"), withImage("example.com/ceph:v17.2.0"), ""},
		"foreign image retagged": {withImage("example.com/ceph:v17.2.0"), withImage("example.com/ceph:v18.2.0"), "spec.template.spec.containers[0].image"},
		"foreign image moved":    {withImage("example.com/ceph:v17.2.0"), withImage("evil.example.com/x:v17.2.0"), "spec.template.spec.containers[0].image"},
	} {
		t.Run(name, func(t *testing.T) {
			errs := ValidateUpdate(tc.old, tc.d, info, DefaultPolicy())
			switch {
			case tc.field == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs)
			case tc.field != "" && !slices.ContainsFunc(errs, func(e *field.Error) bool { return e.Field == tc.field }):
				t.Errorf("errors %v, want one on %s", errs, tc.field)
			}
		})
	}
}

// A grandfathered modules annotation (admitted before the policy took the
// choice away) stays on through other edits, but cannot be changed to
// another module the policy does not offer.
func TestModulesAnnotationRatchets(t *testing.T) {
	info, p := testClusters["rook-ceph"], DefaultPolicy()
	p.ModuleChoices = []string{"prometheus"}
	old := completedMinimal(t)
	old.Annotations = map[string]string{contract.AnnotationModules: "prometheus,nfs"}
	relabelled := old.DeepCopy()
	relabelled.Labels["team"] = "storage"
	if errs := ValidateUpdate(old, relabelled, info, p); len(errs) > 0 {
		t.Errorf("an edit keeping the old annotation was refused: %v", errs.ToAggregate())
	}
	other := old.DeepCopy()
	other.Annotations[contract.AnnotationModules] = "prometheus,restful"
	if errs := ValidateUpdate(old, other, info, p); !hasError(errs, "metadata.annotations[mgr.ceph.rook.io/modules]", field.ErrorTypeNotSupported) {
		t.Errorf("swapping one refused module for another: %v", errs.ToAggregate())
	}
	p.ModuleChoices = nil
	if errs := ValidateUpdate(old, other, info, p); !hasError(errs, "metadata.annotations[mgr.ceph.rook.io/modules]", field.ErrorTypeInvalid) {
		t.Errorf("changing the annotation where no choice is offered: %v", errs.ToAggregate())
	}
}

func TestChosenModules(t *testing.T) {
	cases := map[string]struct {
		mods, choices []string
		outside       []string
		ok            bool
	}{
		"no choices offered":       {[]string{"prometheus"}, nil, []string{"prometheus"}, false},
		"none chosen, no choices":  {nil, nil, nil, false},
		"none chosen is no choice": {nil, []string{"prometheus"}, nil, false},
		"within the choices":       {[]string{"prometheus"}, []string{"prometheus", "dashboard"}, nil, true},
		"one outside":              {[]string{"prometheus", "nfs"}, []string{"prometheus"}, []string{"nfs"}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			outside, ok := contract.ChosenModules(tc.mods, tc.choices)
			if ok != tc.ok || !slices.Equal(outside, tc.outside) {
				t.Errorf("contract.ChosenModules(%v, %v) = %v, %v; want %v, %v", tc.mods, tc.choices, outside, ok, tc.outside, tc.ok)
			}
		})
	}
}

func TestModulesAnnotation(t *testing.T) {
	for name, tc := range map[string]struct {
		annotations map[string]string
		want        []string
		set         bool
	}{
		"no annotation":                 {nil, nil, false},
		"an override, spaces trimmed":   {map[string]string{contract.AnnotationModules: " prometheus , dashboard,"}, []string{"prometheus", "dashboard"}, true},
		"empty: no module at all":       {map[string]string{contract.AnnotationModules: ""}, nil, true},
		"other annotations are ignored": {map[string]string{"x": "rook"}, nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			got, set := contract.ModulesAnnotation(tc.annotations)
			if !slices.Equal(got, tc.want) || set != tc.set {
				t.Errorf("ModulesAnnotation = %v, %v; want %v, %v", got, set, tc.want, tc.set)
			}
		})
	}
}

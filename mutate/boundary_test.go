// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// withImage sets every container's image, as a user changing releases does.
func withImage(d *appsv1.Deployment, image string) *appsv1.Deployment {
	d = d.DeepCopy()
	for i := range d.Spec.Template.Spec.Containers {
		d.Spec.Template.Spec.Containers[i].Image = image
	}
	for i := range d.Spec.Template.Spec.InitContainers {
		d.Spec.Template.Spec.InitContainers[i].Image = image
	}
	return d
}

// TestThresholdsOnBothSides: each numeric and release threshold of the
// core, just inside and just outside.
func TestThresholdsOnBothSides(t *testing.T) {
	info, p := testClusters["rook-ceph"], DefaultPolicy()
	t.Run("one replica is a mgr, two are refused", func(t *testing.T) {
		for replicas, refused := range map[int32]bool{0: false, 1: false, 2: true, 3: true} {
			d := completedMinimal(t)
			d.Spec.Replicas = ptrTo(replicas)
			if got := hasError(Validate(d, info, p), "spec.replicas", field.ErrorTypeInvalid); got != refused {
				t.Errorf("replicas %d: refused %v, want %v", replicas, got, refused)
			}
		}
	})
	t.Run("the policy's minimum release is admitted, the one before it is not", func(t *testing.T) {
		minimum, err := contract.ParseCephTag(p.Images.MinimumCephVersion)
		if err != nil || minimum.Patch == 0 && minimum.Minor == 0 {
			t.Fatalf("the default minimum %q has no release before it in its major (%v)", p.Images.MinimumCephVersion, err)
		}
		before := minimum
		if before.Patch > 0 {
			before.Patch--
		} else {
			before.Minor, before.Patch = before.Minor-1, 99
		}
		next := minimum
		next.Patch++
		cases := map[string]bool{
			fmt.Sprintf("v%d.%d.%d", before.Major, before.Minor, before.Patch):        true,
			fmt.Sprintf("v%d.%d.%d", minimum.Major, minimum.Minor, minimum.Patch):     false,
			fmt.Sprintf("v%d.%d.%d", next.Major, next.Minor, next.Patch):              false,
			fmt.Sprintf("v%d.%d.%d", minimum.Major-1, minimum.Minor+5, minimum.Patch): true,
		}
		for tag, refused := range cases {
			errs := Validate(withImage(completedMinimal(t), "quay.io/ceph/ceph:"+tag), info, p)
			got := slices.ContainsFunc(errs, func(e *field.Error) bool { return e.Origin == string(RuleMinimumCephVersion) })
			if got != refused {
				t.Errorf("%s against minimum %s: refused %v, want %v (%v)", tag, p.Images.MinimumCephVersion, got, refused, errs.ToAggregate())
			}
		}
	})
	t.Run("init containers force module options from Nautilus (14) on", func(t *testing.T) {
		for tag, force := range map[string]bool{"v13.2.10": false, "v14.2.0": true, "v15.2.17": true} {
			in := withImage(loadDeployment(t, "../manifests/examples/minimal-mgr.yaml"), "quay.io/ceph/ceph:"+tag)
			res, errs := Complete(in, info, p)
			if len(errs) > 0 {
				t.Fatal(errs.ToAggregate())
			}
			ics := res.Deployment.Spec.Template.Spec.InitContainers
			if len(ics) == 0 {
				t.Fatalf("%s: no init containers", tag)
			}
			for _, ic := range ics {
				if got := slices.Contains(ic.Args, "--force"); got != force {
					t.Errorf("%s: init container %s --force %v, want %v (args %v)", tag, ic.Name, got, force, ic.Args)
				}
			}
		}
	})
	t.Run("a connect timeout of 0 is valid, -1 is not", func(t *testing.T) {
		for seconds, invalid := range map[int32]bool{-1: true, 0: false, 1: false} {
			q := DefaultPolicy()
			q.ServerAddrInitContainers.ConnectTimeoutSeconds = seconds
			errs := q.validate(field.NewPath("policy"))
			if got := hasError(errs, "policy.serverAddrInitContainers.connectTimeoutSeconds", field.ErrorTypeInvalid); got != invalid {
				t.Errorf("connectTimeoutSeconds %d: invalid %v, want %v", seconds, got, invalid)
			}
		}
	})
	t.Run("module names", func(t *testing.T) {
		for name, invalid := range map[string]bool{"a": false, "rook": false, "k8sevents": false, "mds_autoscaler": false,
			"": true, "1a": true, "_a": true, "Rook": true, "a-b": true, "a b": true, "rook\n": true} {
			q := DefaultPolicy()
			q.Modules = []string{name}
			if got := hasError(q.validate(field.NewPath("policy")), "policy.modules[0]", field.ErrorTypeInvalid); got != invalid {
				t.Errorf("module %q: invalid %v, want %v", name, got, invalid)
			}
		}
	})
}

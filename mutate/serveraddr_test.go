// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// adminKeyringUses lists where a Pod spec reads client.admin's keyring.
func adminKeyringUses(spec *corev1.PodSpec) []string {
	var uses []string
	for _, v := range spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == contract.AdminKeyringSecretName {
			uses = append(uses, "volume "+v.Name)
		}
	}
	for _, ctr := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		for _, m := range ctr.VolumeMounts {
			if m.Name == legacyAdminKeyringVolumeName {
				uses = append(uses, "mount in "+ctr.Name)
			}
		}
		for _, a := range ctr.Args {
			if strings.Contains(a, legacyAdminKeyringMountPath) {
				uses = append(uses, "flag "+a+" of "+ctr.Name)
			}
		}
	}
	return uses
}

// TestNoAdminKeyringInAMgrPod: the server_addr init containers run as their
// own key, on every fixture, and a mgr an earlier version completed with
// client.admin's keyring (the seed's way) is moved off it: completing it
// again gives the same Pod template as completing the minimal example.
func TestNoAdminKeyringInAMgrPod(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			_, res := completeFixture(t, f)
			spec := &res.Deployment.Spec.Template.Spec
			if uses := adminKeyringUses(spec); len(uses) > 0 {
				t.Errorf("the completed mgr pod reads client.admin's keyring: %v", uses)
			}
			for _, ic := range spec.InitContainers {
				if !strings.HasSuffix(ic.Name, "-server-addr") {
					continue
				}
				id := res.Deployment.Labels[contract.LabelMgrID]
				if !slices.Contains(ic.Args, "--name="+contract.ServerAddrEntity(id)) || !slices.Contains(ic.Args, "--keyring="+ServerAddrKeyringMountPath+"keyring") {
					t.Errorf("%s does not run as %s: %v", ic.Name, contract.ServerAddrEntity(id), ic.Args)
				}
			}
		})
	}

	_, legacy := completeFixture(t, fixture{name: "legacy", input: "testdata/legacy-admin-keyring.yaml", policy: DefaultPolicy()})
	_, fresh := completeFixture(t, fixture{name: "fresh", input: "../manifests/examples/minimal-mgr.yaml", policy: DefaultPolicy()})
	withoutRetiredEnv(&legacy.Deployment.Spec.Template.Spec) // kept on purpose: TestRetiredEnvKeepsItsPlace
	if !equality.Semantic.DeepEqual(legacy.Deployment.Spec.Template, fresh.Deployment.Spec.Template) {
		t.Errorf("a mgr completed with the admin keyring, completed again, differs from a fresh one:\n got: %+v\nwant: %+v",
			legacy.Deployment.Spec.Template.Spec, fresh.Deployment.Spec.Template.Spec)
	}
	if legacy.Changed&SectionInitContainers == 0 || legacy.Changed&SectionVolumes == 0 {
		t.Errorf("the move off the admin keyring is not reported as a change (sections %v)", legacy.Changed)
	}
}

// TestAdminKeyringAUserMountsStays: completion never breaks a Pod spec it did
// not write: a container of the user's that mounts the seed's admin keyring
// volume keeps it (the init containers still lose it).
func TestAdminKeyringAUserMountsStays(t *testing.T) {
	in := loadDeployment(t, "testdata/legacy-admin-keyring.yaml")
	spec := &in.Spec.Template.Spec
	spec.Containers = append(spec.Containers, corev1.Container{Name: "tool", Image: "tool:1",
		VolumeMounts: []corev1.VolumeMount{{Name: legacyAdminKeyringVolumeName, MountPath: "/admin"}}})
	res, errs := Complete(in, clusterOf(t, in), DefaultPolicy())
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	got := &res.Deployment.Spec.Template.Spec
	if !slices.ContainsFunc(got.Volumes, func(v corev1.Volume) bool { return v.Name == legacyAdminKeyringVolumeName }) {
		t.Error("the admin keyring volume a user's container mounts was removed")
	}
	for _, ic := range got.InitContainers {
		if slices.ContainsFunc(ic.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == legacyAdminKeyringVolumeName }) {
			t.Errorf("init container %s still mounts the admin keyring", ic.Name)
		}
	}
}

// TestPlaceForce: --force goes right after `config set`'s value, where the
// ceph CLI reads it (before the command it is taken for the command's first
// word); a command of the user's own is left alone.
func TestPlaceForce(t *testing.T) {
	cmd := []string{"config", "set", "mgr.a", "mgr/dashboard/a/server_addr", "$(ROOK_POD_IP)"}
	for name, tc := range map[string]struct {
		args, want []string
		force      bool
	}{
		"before the command: moved": {append([]string{"--fsid=x", "--force"}, append(cmd, "--verbose")...), append(append([]string{"--fsid=x"}, cmd...), "--force", "--verbose"), true},
		"in place: kept":            {append(append([]string{"--fsid=x"}, cmd...), "--force", "--verbose"), append(append([]string{"--fsid=x"}, cmd...), "--force", "--verbose"), true},
		"missing: added":            {append(slices.Clone(cmd), "--verbose"), append(slices.Clone(cmd), "--force", "--verbose"), true},
		"twice: once":               {append([]string{"--force"}, append(slices.Clone(cmd), "--force")...), append(slices.Clone(cmd), "--force"), true},
		"a Mimic image: taken out":  {append([]string{"--force"}, cmd...), cmd, false},
		"the user's command: as is": {[]string{"--force", "config", "get", "mgr.a"}, []string{"--force", "config", "get", "mgr.a"}, true},
		"a short config set: as is": {[]string{"--force", "config", "set", "x"}, []string{"--force", "config", "set", "x"}, true},
	} {
		t.Run(name, func(t *testing.T) {
			args := slices.Clone(tc.args)
			changed := placeForce(&args, tc.force)
			if !slices.Equal(args, tc.want) || changed != !slices.Equal(tc.args, tc.want) {
				t.Errorf("placeForce(%v, %v) = %v (changed %v), want %v", tc.args, tc.force, args, changed, tc.want)
			}
		})
	}
}

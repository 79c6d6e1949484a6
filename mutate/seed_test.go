// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// SeedDeviations lists, on purpose, where our completion differs from the
// seed's Pod: the init containers get a mon connect timeout so an unreachable
// mon fails them instead of hanging them (rook#3049), and a key of their own
// (withOwnServerAddrKey). Everything else of the Pod template must equal the
// seed field by field.
var seedDeviations = map[string]string{
	"--connect-timeout=15": "init containers: bounded mon connection (rook#3049)",
}

// isRetired: the seed's ROOK_VERSION, which completion no longer writes
// (retiredEnv: a new operator version restarted every mgr, rook#4361).
func isRetired(e corev1.EnvVar) bool { return slices.Contains(retiredEnv, e.Name) }

// seedPlacementDeviations are the Pod's fields where completion differs
// from the seed on purpose, because Rook places and probes its mgrs so
// today and the seed (2019) did not: each entry says why, and
// TestSeedPodTemplate checks that the seed lacks what completion sets.
var seedPlacementDeviations = map[string]string{
	"affinity":          "required anti-affinity on kubernetes.io/hostname between the mgrs of a cluster: one node's loss takes one mgr at most",
	"tolerations":       "node.kubernetes.io/unreachable and not-ready for 5 s instead of 300: a mgr on a lost node is replaced in seconds",
	"priorityClassName": "system-cluster-critical (Rook's example cluster): a mgr is not preempted for ordinary pods",
	"securityContext":   "every container of ours drops NET_RAW (as Rook's daemons): no raw sockets from a mgr pod",
	"startupProbe":      "the mgr's admin socket, 6 x 10 s, before liveness counts",
	"lifecycle":         "a preStop hook fails the mgr over: a drained or deleted active mgr hands over at once, not after the 30 s beacon grace",
}

// withOwnServerAddrKey turns the seed's init containers into ours on
// purpose: they run as a key of their own (client.rook-ceph-server-addr-<id>,
// which may set its mgr's two server_addr options and nothing else) where
// the seed mounts client.admin's keyring into every mgr pod. The flag, the
// mount and the volume take the admin keyring's places.
func withOwnServerAddrKey(spec *corev1.PodSpec, id string) {
	for i := range spec.InitContainers {
		ic := &spec.InitContainers[i]
		if k := slices.Index(ic.Args, "--keyring="+legacyAdminKeyringMountPath+"keyring"); k >= 0 {
			ic.Args = slices.Replace(ic.Args, k, k+1, "--keyring="+ServerAddrKeyringMountPath+"keyring", "--name="+contract.ServerAddrEntity(id))
		}
		for j := range ic.VolumeMounts {
			if ic.VolumeMounts[j].Name == legacyAdminKeyringVolumeName {
				ic.VolumeMounts[j] = corev1.VolumeMount{Name: ServerAddrKeyringVolumeName, MountPath: ServerAddrKeyringMountPath, ReadOnly: true}
			}
		}
	}
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == legacyAdminKeyringVolumeName {
			spec.Volumes[i].Name = ServerAddrKeyringVolumeName
			spec.Volumes[i].Secret.SecretName = contract.ServerAddrKeyringSecretName(id)
		}
	}
}

// seedPod reads the seed's reference Pod without what the kubelet, the
// scheduler and the ServiceAccount admission add at run time.
func seedPod(t testing.TB) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile("testdata/reference/seed-mgr-a-pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := yaml.UnmarshalStrict(data, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// withoutRuntimeFields strips the service account token volume (added per Pod
// by the API server) from a Pod spec.
func withoutRuntimeFields(spec *corev1.PodSpec) {
	isToken := func(name string) bool { return strings.HasPrefix(name, "rook-ceph-mgr-token-") }
	spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool { return isToken(v.Name) })
	for _, cs := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range cs {
			cs[i].VolumeMounts = slices.DeleteFunc(cs[i].VolumeMounts, func(m corev1.VolumeMount) bool { return isToken(m.Name) })
		}
	}
}

// TestSeedPodTemplate compares what Complete writes for the seed's mgr "a"
// with the seed's Pod, field by field, for every field Complete sets (API
// server defaults are compared by the integration test through a real
// kube-apiserver).
func TestSeedPodTemplate(t *testing.T) {
	f := fixture{name: "seed", input: "testdata/seed.yaml"}
	data, _ := os.ReadFile("testdata/seed.policy.yaml")
	p, err := ParsePolicy(data)
	if err != nil {
		t.Fatal(err)
	}
	f.policy = p
	_, res := completeFixture(t, f)
	got := res.Deployment.Spec.Template
	want := seedPod(t)
	withoutRuntimeFields(&want.Spec)
	withOwnServerAddrKey(&want.Spec, "a")

	for k, v := range want.Labels {
		if k == "pod-template-hash" {
			continue
		}
		if got.Labels[k] != v {
			t.Errorf("template label %s = %q, seed has %q", k, got.Labels[k], v)
		}
	}
	if got.Spec.ServiceAccountName != want.Spec.ServiceAccountName {
		t.Errorf("serviceAccountName = %q, seed has %q", got.Spec.ServiceAccountName, want.Spec.ServiceAccountName)
	}
	compare := func(kind string, got, want []corev1.Container) {
		if len(got) != len(want) {
			t.Fatalf("%d %s, seed has %d", len(got), kind, len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			args := slices.DeleteFunc(slices.Clone(g.Args), func(a string) bool { _, dev := seedDeviations[a]; return dev })
			for _, c := range []struct {
				field     string
				got, want any
			}{
				{"name", g.Name, w.Name},
				{"image", g.Image, w.Image},
				{"command", g.Command, w.Command},
				{"args", args, w.Args},
				{"env", g.Env, slices.DeleteFunc(slices.Clone(w.Env), isRetired)},
				{"ports", g.Ports, w.Ports},
				{"volumeMounts", g.VolumeMounts, w.VolumeMounts},
				{"resources", g.Resources, w.Resources},
			} {
				if !equality.Semantic.DeepEqual(c.got, c.want) {
					t.Errorf("%s[%d] (%s) %s:\n got: %v\nseed: %v", kind, i, w.Name, c.field, c.got, c.want)
				}
			}
		}
	}
	compare("containers", got.Spec.Containers, want.Spec.Containers)
	compare("initContainers", got.Spec.InitContainers, want.Spec.InitContainers)

	// The deviations: set by completion, absent from the seed.
	seedLacks := func(field string, got, seed any, set bool) {
		t.Helper()
		if _, listed := seedPlacementDeviations[field]; !listed {
			t.Fatalf("%s is not a listed deviation", field)
		}
		if !set || equality.Semantic.DeepEqual(got, seed) {
			t.Errorf("%s: completion sets %v, the seed %v; a listed deviation must be set and differ", field, got, seed)
		}
	}
	noAffinity := want.Spec.Affinity == nil || want.Spec.Affinity.PodAntiAffinity == nil
	seedLacks("affinity", got.Spec.Affinity, want.Spec.Affinity, noAffinity && got.Spec.Affinity != nil && got.Spec.Affinity.PodAntiAffinity != nil)
	seedLacks("tolerations", got.Spec.Tolerations, want.Spec.Tolerations, len(got.Spec.Tolerations) == 2)
	seedLacks("priorityClassName", got.Spec.PriorityClassName, want.Spec.PriorityClassName, got.Spec.PriorityClassName != "")
	for i, ctr := range append(slices.Clone(got.Spec.Containers), got.Spec.InitContainers...) {
		seed := append(slices.Clone(want.Spec.Containers), want.Spec.InitContainers...)[i]
		sc := ctr.SecurityContext
		seedLacks("securityContext", sc, seed.SecurityContext, sc != nil && sc.Capabilities != nil && slices.Contains(sc.Capabilities.Drop, "NET_RAW"))
	}
	seedLacks("startupProbe", got.Spec.Containers[0].StartupProbe, want.Spec.Containers[0].StartupProbe, got.Spec.Containers[0].StartupProbe != nil)
	seedLacks("lifecycle", got.Spec.Containers[0].Lifecycle, want.Spec.Containers[0].Lifecycle, got.Spec.Containers[0].Lifecycle != nil)

	// Volumes: the seed shows API-server defaults (defaultMode 420); compare
	// what we set after filling those in.
	vols := got.DeepCopy().Spec.Volumes
	for i := range vols {
		if s := vols[i].Secret; s != nil && s.DefaultMode == nil {
			s.DefaultMode = ptrTo[int32](0o644)
		}
		if c := vols[i].ConfigMap; c != nil && c.DefaultMode == nil {
			c.DefaultMode = ptrTo[int32](0o644)
		}
	}
	if !equality.Semantic.DeepEqual(vols, want.Spec.Volumes) {
		t.Errorf("volumes:\n got: %+v\nseed: %+v", vols, want.Spec.Volumes)
	}
}

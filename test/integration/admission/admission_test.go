// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

func exampleFile() string {
	return filepath.Join(repoRoot, "manifests", "examples", "minimal-mgr.yaml")
}

func example(t *testing.T) *appsv1.Deployment {
	t.Helper()
	data, err := os.ReadFile(exampleFile())
	if err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(data, d); err != nil {
		t.Fatal(err)
	}
	return d
}

func getDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	return d
}

func deleteDeployment(t *testing.T, ns, name string) {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := k8s.Delete(context.Background(), d); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

func infoOf(ns string) mutate.ClusterInfo {
	for _, c := range cephClusters {
		if c.Namespace == ns {
			return mutate.ClusterInfo{Namespace: c.Namespace, FSID: c.FSID}
		}
	}
	panic("no cluster " + ns)
}

// assertCompleted checks that the stored Deployment carries every value
// Complete sets (the API server adds its own defaults around them).
func assertCompleted(t *testing.T, stored, want *appsv1.Deployment) {
	t.Helper()
	if *stored.Spec.Replicas != *want.Spec.Replicas || stored.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("replicas %d strategy %s", *stored.Spec.Replicas, stored.Spec.Strategy.Type)
	}
	for _, pair := range [][2]map[string]string{{stored.Labels, want.Labels}, {stored.Spec.Template.Labels, want.Spec.Template.Labels}, {stored.Spec.Selector.MatchLabels, want.Spec.Selector.MatchLabels}} {
		if !equality.Semantic.DeepEqual(pair[0], pair[1]) {
			t.Errorf("labels: %s", cmp.Diff(pair[1], pair[0]))
		}
	}
	if stored.Spec.Template.Spec.ServiceAccountName != want.Spec.Template.Spec.ServiceAccountName {
		t.Errorf("serviceAccountName %q", stored.Spec.Template.Spec.ServiceAccountName)
	}
	check := func(kind string, got, want []corev1.Container) {
		if len(got) != len(want) {
			t.Fatalf("%s: stored %d, want %d", kind, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			for _, f := range []struct {
				name      string
				got, want any
			}{{"name", g.Name, w.Name}, {"image", g.Image, w.Image}, {"command", g.Command, w.Command}, {"args", g.Args, w.Args},
				{"env", g.Env, w.Env}, {"ports", g.Ports, w.Ports}, {"volumeMounts", g.VolumeMounts, w.VolumeMounts}} {
				if !equality.Semantic.DeepEqual(f.got, f.want) {
					t.Errorf("%s[%s].%s (-want +stored):\n%s", kind, w.Name, f.name, cmp.Diff(f.want, f.got))
				}
			}
			if (w.LivenessProbe == nil) != (g.LivenessProbe == nil) || (w.LivenessProbe != nil && !equality.Semantic.DeepEqual(w.LivenessProbe.Exec, g.LivenessProbe.Exec)) {
				t.Errorf("%s[%s].livenessProbe stored %+v, want %+v", kind, w.Name, g.LivenessProbe, w.LivenessProbe)
			}
		}
	}
	check("containers", stored.Spec.Template.Spec.Containers, want.Spec.Template.Spec.Containers)
	check("initContainers", stored.Spec.Template.Spec.InitContainers, want.Spec.Template.Spec.InitContainers)
	var gotVols, wantVols []string
	for _, v := range stored.Spec.Template.Spec.Volumes {
		gotVols = append(gotVols, v.Name)
	}
	for _, v := range want.Spec.Template.Spec.Volumes {
		wantVols = append(wantVols, v.Name)
	}
	if !slices.Equal(gotVols, wantVols) {
		t.Errorf("volumes %v, want %v", gotVols, wantVols)
	}
}

// TestMinimalExampleIsStoredComplete applies the shipped example with kubectl
// and reads back what the API server stored.
func TestMinimalExampleIsStoredComplete(t *testing.T) {
	ex := example(t)
	defer deleteDeployment(t, ex.Namespace, ex.Name)
	// A minimal mgr is nothing to warn about: --warnings-as-errors passes.
	out, err := api.RunKubectl(t.Context(), nil, "apply", "--warnings-as-errors", "-f", exampleFile())
	if err != nil || strings.Contains(out, "Warning") {
		t.Fatalf("kubectl apply --warnings-as-errors: %v\n%s", err, out)
	}
	yamlOut, err := api.RunKubectl(t.Context(), nil, "get", "deployment", "-n", ex.Namespace, ex.Name, "-o", "yaml")
	if err != nil {
		t.Fatal(err, yamlOut)
	}
	stored := &appsv1.Deployment{}
	if err := yaml.Unmarshal([]byte(yamlOut), stored); err != nil {
		t.Fatal(err)
	}
	want, errs := mutate.Complete(ex, infoOf(ex.Namespace), policy())
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	assertCompleted(t, stored, want.Deployment)

	// Re-applying the same manifest changes nothing: same generation, same resourceVersion.
	out, err = api.RunKubectl(t.Context(), nil, "apply", "-f", exampleFile())
	if err != nil {
		t.Fatalf("second kubectl apply: %v\n%s", err, out)
	}
	again := getDeployment(t, ex.Namespace, ex.Name)
	if again.Generation != stored.Generation || again.ResourceVersion != stored.ResourceVersion {
		t.Errorf("re-apply changed the object: generation %d -> %d, resourceVersion %s -> %s",
			stored.Generation, again.Generation, stored.ResourceVersion, again.ResourceVersion)
	}

	// A new image in the manifest: the derived values follow it, the rest stays.
	bumped := strings.Replace(string(must(os.ReadFile(exampleFile()))), "v19.2.3", "v19.2.2", 1)
	if out, err := api.RunKubectl(t.Context(), []byte(bumped), "apply", "-f", "-"); err != nil {
		t.Fatalf("apply with a new image: %v\n%s", err, out)
	}
	upd := getDeployment(t, ex.Namespace, ex.Name)
	if upd.Generation != stored.Generation+1 {
		t.Errorf("generation %d after an image change, want %d", upd.Generation, stored.Generation+1)
	}
	for _, c := range append(upd.Spec.Template.Spec.InitContainers, upd.Spec.Template.Spec.Containers[0]) {
		if c.Image != "quay.io/ceph/ceph:v19.2.2" || c.Env[0].Name != "CONTAINER_IMAGE" || c.Env[0].Value != c.Image {
			t.Errorf("%s: image %s CONTAINER_IMAGE %s after the image change", c.Name, c.Image, c.Env[0].Value)
		}
	}

	// One mistake, one error: the refused image is named on the mgr
	// container only, not again on the init containers that copy it.
	bad := strings.Replace(string(must(os.ReadFile(exampleFile()))), "quay.io/ceph/ceph:v19.2.3", "busybox:latest", 1)
	out, err = api.RunKubectl(t.Context(), []byte(bad), "apply", "-f", "-")
	if err == nil || strings.Count(out, ".image:") != 1 || !strings.Contains(out, "spec.template.spec.containers[0].image: Unsupported value") {
		t.Errorf("apply with image busybox:latest: %v, want one error on containers[0].image:\n%s", err, out)
	}

	// A value of the user's that the webhook replaces is a warning.
	chosen := strings.Replace(string(must(os.ReadFile(exampleFile()))), "spec:\n  template:", "spec:\n  strategy:\n    type: RollingUpdate\n    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}\n  template:", 1)
	out, err = api.RunKubectl(t.Context(), []byte(chosen), "apply", "-f", "-")
	if err != nil || !strings.Contains(out, "Warning: spec.strategy: RollingUpdate (maxSurge 1, maxUnavailable 0) replaced by Recreate") {
		t.Errorf("apply with a RollingUpdate strategy: %v, want the replacement warned:\n%s", err, out)
	}
}

// TestSeedPodTemplateThroughAPIServer stores the seed's mgr "a" and compares
// the stored Pod template, with the API server's defaults, to the seed's Pod
// field by field. Only run-time fields of a Pod and our documented deviations
// are set aside.
func TestSeedPodTemplateThroughAPIServer(t *testing.T) {
	ex := example(t)
	if err := k8s.Create(t.Context(), ex); err != nil {
		t.Fatal(err)
	}
	defer deleteDeployment(t, ex.Namespace, ex.Name)
	stored := getDeployment(t, ex.Namespace, ex.Name)

	seed := &corev1.Pod{}
	if err := yaml.Unmarshal(must(os.ReadFile(filepath.Join(repoRoot, "mutate", "testdata", "reference", "seed-mgr-a-pod.yaml"))), seed); err != nil {
		t.Fatal(err)
	}
	want := toMap(t, seed.Spec)
	// Fields of a Pod, not of its template: the node, the per-Pod token volume,
	// enableServiceLinks (defaulted on Pods only); and Rook's empty affinity.
	for _, k := range []string{"nodeName", "enableServiceLinks", "affinity"} {
		delete(want, k)
	}
	dropToken(want)

	// The seed's image is Mimic, which the default policy no longer admits:
	// the stored template carries the example's image wherever the seed has
	// its own, and is compared with the seed's image name put back.
	const seedImage = "ceph/ceph:v13.2.3-20190410"
	image := ex.Spec.Template.Spec.Containers[0].Image
	got := map[string]any{}
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(must(json.Marshal(stored.Spec.Template.Spec))), `"`+image+`"`, `"`+seedImage+`"`)), &got); err != nil {
		t.Fatal(err)
	}
	// Our deliberate deviations: the admin-socket liveness probe (rook#3370),
	// the init containers' mon connect timeout (rook#3049) and, for the
	// Pacific image, their `config set --force` (from Nautilus, rook#3030).
	delete(got["containers"].([]any)[0].(map[string]any), "livenessProbe")
	for _, ic := range got["initContainers"].([]any) {
		m := ic.(map[string]any)
		m["args"] = slices.DeleteFunc(m["args"].([]any), func(a any) bool { return a == "--connect-timeout=15" || a == "--force" })
	}
	// And where Rook places and probes mgrs today and the seed did not
	// (mutate's seedPlacementDeviations, each checked there to be set): the
	// anti-affinity, 5 s node-loss tolerations, the priority class, the
	// startup probe, the hand-over hook, and NET_RAW dropped in every
	// container of ours.
	for _, k := range []string{"affinity", "tolerations", "priorityClassName"} {
		if _, ok := got[k]; !ok {
			t.Errorf("stored template lacks %s", k)
		}
		delete(got, k)
	}
	delete(got["containers"].([]any)[0].(map[string]any), "startupProbe")
	delete(got["containers"].([]any)[0].(map[string]any), "lifecycle")
	for _, key := range []string{"containers", "initContainers"} {
		for _, c := range got[key].([]any) {
			delete(c.(map[string]any), "securityContext")
		}
	}
	// And their own key where the seed mounts client.admin's keyring: the
	// flag, the mount and the volume in the admin keyring's places.
	for _, ic := range want["initContainers"].([]any) {
		m := ic.(map[string]any)
		var args []any
		for _, a := range m["args"].([]any) {
			if a == "--keyring=/etc/ceph/admin-keyring-store/keyring" {
				args = append(args, "--keyring="+mutate.ServerAddrKeyringMountPath+"keyring", "--name="+contract.ServerAddrEntity("a"))
				continue
			}
			args = append(args, a)
		}
		m["args"] = args
		for _, vm := range m["volumeMounts"].([]any) {
			if vm := vm.(map[string]any); vm["name"] == "rook-ceph-admin-keyring" {
				vm["name"], vm["mountPath"] = mutate.ServerAddrKeyringVolumeName, mutate.ServerAddrKeyringMountPath
			}
		}
	}
	// And no ROOK_VERSION, which restarted every mgr on an operator upgrade
	// (rook#4361; mutate's retiredEnv).
	for _, key := range []string{"containers", "initContainers"} {
		for _, c := range want[key].([]any) {
			m := c.(map[string]any)
			m["env"] = slices.DeleteFunc(m["env"].([]any), func(e any) bool { return e.(map[string]any)["name"] == "ROOK_VERSION" })
		}
	}
	for _, v := range want["volumes"].([]any) {
		if v := v.(map[string]any); v["name"] == "rook-ceph-admin-keyring" {
			v["name"] = mutate.ServerAddrKeyringVolumeName
			v["secret"].(map[string]any)["secretName"] = contract.ServerAddrKeyringSecretName("a")
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stored Pod template differs from the seed's Pod (-seed +stored):\n%s", diff)
	}
	if v := stored.Spec.Template.Labels; v["rook_cluster"] != "rook-ceph" || v["ceph_daemon_id"] != "a" || v["instance"] != "a" || v["app"] != "rook-ceph-mgr" || v["mgr"] != "a" {
		t.Errorf("template labels %v", v)
	}
}

func toMap(t *testing.T, v any) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := json.Unmarshal(must(json.Marshal(v)), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func dropToken(spec map[string]any) {
	isToken := func(a any) bool {
		return strings.HasPrefix(a.(map[string]any)["name"].(string), "rook-ceph-mgr-token-")
	}
	spec["volumes"] = slices.DeleteFunc(spec["volumes"].([]any), isToken)
	for _, key := range []string{"containers", "initContainers"} {
		for _, c := range spec[key].([]any) {
			m := c.(map[string]any)
			m["volumeMounts"] = slices.DeleteFunc(m["volumeMounts"].([]any), isToken)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var _ client.Object = &appsv1.Deployment{}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// explainOnFailure prints what the cluster holds about a mgr when a test
// fails: its status, Events and pods.
func explainOnFailure(t *testing.T, ns, name string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, args := range [][]string{
			{"get", "deployment", "-n", ns, name, "-o", "jsonpath={.metadata.annotations}"},
			{"get", "events", "-n", ns, "--field-selector", "involvedObject.name=" + name},
			{"get", "pods,secrets,services", "-n", ns, "-l", "app=rook-ceph-mgr"},
		} {
			out, _ := env.kubectl(t, nil, args...)
			t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
		}
	})
}

func apply(t *testing.T, manifest []byte) string {
	t.Helper()
	out, err := env.kubectl(t, manifest, "apply", "-f", "-")
	if err != nil {
		t.Fatalf("kubectl apply: %v\n%s\nmanifest:\n%s", err, out, manifest)
	}
	return out
}

func deployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	return d
}

func waitReady(t *testing.T, ns, name string) mgrstatus.Status {
	t.Helper()
	var st mgrstatus.Status
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return false, nil
		}
		var err error
		if st, err = mgrstatus.Of(d); err != nil {
			return false, err
		}
		return st.Phase == mgrstatus.PhaseReady, nil
	})
	if err != nil {
		t.Fatalf("%s/%s never bootstrapped; last status %+v", ns, name, st)
	}
	return st
}

func cephKey(t *testing.T, ns, entity string) string {
	t.Helper()
	out, err := env.Ceph(context.Background(), ns, "auth", "get-key", entity)
	if err != nil {
		t.Fatalf("ceph auth get-key %s in %s: %v", entity, ns, err)
	}
	var k struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(out, &k); err != nil {
		t.Fatal(err)
	}
	return k.Key
}

func fsidOf(t *testing.T, ns string) string {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "rook-ceph-mon"}, s); err != nil {
		t.Fatal(err)
	}
	return string(s.Data["fsid"])
}

func keyringHolds(t *testing.T, ns, id, key string) {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: contract.KeyringSecretName(id)}, s); err != nil {
		t.Fatalf("keyring Secret of mgr %s in %s: %v", id, ns, err)
	}
	if !strings.Contains(string(s.Data["keyring"]), "key = "+key+"\n") {
		t.Errorf("Secret %s/%s does not hold Ceph's key for mgr.%s", ns, s.Name, id)
	}
}

// TestMgrLifecycle: the main story in the first Ceph namespace.
func TestMgrLifecycle(t *testing.T) {
	ns := env.Namespaces[0]
	name := "rook-ceph-mgr-a"
	explainOnFailure(t, ns, name)
	manifest := env.manifest(t, ns, "a", nil)

	t.Run("minimal apply completes", func(t *testing.T) {
		out := apply(t, manifest)
		if !strings.Contains(out, "created") {
			t.Errorf("kubectl apply: %s", out)
		}
		d := deployment(t, ns, name)
		c := d.Spec.Template.Spec.Containers[0]
		wantArgs := []string{"--fsid=" + fsidOf(t, ns), "--id=a", "--foreground", "--keyring=/etc/ceph/keyring-store/keyring"}
		for _, a := range wantArgs {
			if !strings.Contains(strings.Join(c.Args, " "), a) {
				t.Errorf("stored args %v lack %s", c.Args, a)
			}
		}
		if len(d.Spec.Template.Spec.InitContainers) != 2 || d.Spec.Template.Labels["rook_cluster"] != ns || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("stored template not complete: init containers %d, labels %v, strategy %s",
				len(d.Spec.Template.Spec.InitContainers), d.Spec.Template.Labels, d.Spec.Strategy.Type)
		}
	})

	t.Run("keyring, Services, modules", func(t *testing.T) {
		st := waitReady(t, ns, name)
		keyringHolds(t, ns, "a", cephKey(t, ns, "mgr.a"))
		for _, svc := range []string{contract.MetricsServiceName, contract.DashboardServiceName} {
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: svc}, &corev1.Service{}); err != nil {
				t.Errorf("Service %s: %v", svc, err)
			}
		}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "rook-ceph-mgr-pdb"}, &policyv1.PodDisruptionBudget{}); !apierrors.IsNotFound(err) {
			t.Errorf("one mgr: want no PodDisruptionBudget, got %v", err)
		}
		// Enabled, not merely listed: module ls names disabled modules too.
		on := enabled(t, ns)
		wanted := []string{"prometheus", "dashboard", "rook"}
		if strings.HasPrefix(st.CephVersion, "20.2.") {
			// Tentacle 20.2: rook is left off (README, "Ceph releases").
			wanted = wanted[:2]
			if contains(on, "rook") || !contains(st.Unavailable, "rook") {
				t.Errorf("Ceph %s: rook enabled %v, unavailable %v; want it left off", st.CephVersion, on, st.Unavailable)
			}
		}
		for _, m := range wanted {
			if !contains(on, m) || !contains(st.Modules, m) {
				t.Errorf("module %s: enabled %v, status %v", m, on, st.Modules)
			}
		}
	})

	t.Run("re-apply is a no-op", func(t *testing.T) {
		before := deployment(t, ns, name)
		out := apply(t, manifest)
		after := deployment(t, ns, name)
		// kubectl may still send a $setElementOrder directive for a list the
		// webhook extended (ports) and print "configured"; what matters is that
		// the API server stored nothing new.
		if after.Generation != before.Generation || after.ResourceVersion != before.ResourceVersion {
			t.Errorf("re-apply: %q, generation %d -> %d, resourceVersion %s -> %s", strings.TrimSpace(out), before.Generation, after.Generation, before.ResourceVersion, after.ResourceVersion)
		}
	})

	t.Run("policy denials", func(t *testing.T) {
		for what, edit := range map[string]struct{ from, to, field string }{
			"two replicas":     {"spec:\n", "spec:\n  replicas: 2\n", "spec.replicas"},
			"foreign registry": {env.mgrImage(), "registry.example.com/ceph:v16.2.15", "spec.template.spec.containers[0].image"},
			"release too old":  {env.mgrImage(), "quay.io/ceph/ceph:v12.2.13", "spec.template.spec.containers[0].image"},
		} {
			bad := strings.Replace(string(env.manifest(t, ns, "denied", nil)), edit.from, edit.to, 1)
			out, err := env.kubectl(t, []byte(bad), "apply", "-f", "-")
			if err == nil || !strings.Contains(out, edit.field) || !strings.Contains(out, `The Deployment "rook-ceph-mgr-denied" is invalid`) {
				t.Errorf("%s: want a denial naming %s, got %v:\n%s", what, edit.field, err, out)
			}
		}
	})
}

// TestTwoMgrsInOneNamespace: mgr b beside mgr a, each with its own key and
// Services; deleting b removes its key and objects and leaves a alone.
func TestTwoMgrsInOneNamespace(t *testing.T) {
	ns := env.Namespaces[0]
	explainOnFailure(t, ns, "rook-ceph-mgr-b")
	if p, ok := env.Ports[ns]["b"]; ok {
		// Locally: b's dashboard on a port other than its daemon was
		// started with, so only the controller can have set it.
		free, err := testenv.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		env.Ports[ns]["b"] = [2]int32{p[0], int32(free)}
	}
	apply(t, env.manifest(t, ns, "a", nil))
	apply(t, env.manifest(t, ns, "b", nil))
	waitReady(t, ns, "rook-ceph-mgr-a")
	waitReady(t, ns, "rook-ceph-mgr-b")
	// Completed with the anti-affinity of a cluster's mgrs: never one node.
	pods := &corev1.PodList{}
	if err := env.Client.List(t.Context(), pods, client.InNamespace(ns), client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
		t.Fatal(err)
	}
	onNode := map[string][]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Spec.NodeName != "" {
			onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], p.Name)
		}
	}
	for node, names := range onNode {
		if len(names) > 1 {
			t.Errorf("mgr pods %v share node %s", names, node)
		}
	}
	// Each mgr's module ports are its own container's, though b found the
	// modules on already.
	for _, id := range []string{"a", "b"} {
		want := int32(contract.PortDashboard)
		if p, ok := env.Ports[ns][id]; ok {
			want = p[1]
		}
		out, err := env.Ceph(t.Context(), ns, "config", "get", "mgr."+id, "mgr/dashboard/ssl_server_port")
		if err != nil || strings.Trim(strings.TrimSpace(string(out)), `"`) != strconv.Itoa(int(want)) {
			t.Errorf("mgr %s's dashboard port in Ceph: %s (%v); want its container's %d", id, out, err, want)
		}
	}
	keyA, keyB := cephKey(t, ns, "mgr.a"), cephKey(t, ns, "mgr.b")
	if keyA == keyB {
		t.Fatal("mgr a and b share a key")
	}
	keyringHolds(t, ns, "a", keyA)
	keyringHolds(t, ns, "b", keyB)
	pdb := &policyv1.PodDisruptionBudget{}
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rook-ceph-mgr-pdb"}, pdb) == nil, nil
	})
	if err != nil || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.Selector.MatchLabels["rook_cluster"] != ns {
		t.Errorf("two mgrs: PodDisruptionBudget rook-ceph-mgr-pdb with maxUnavailable 1: %v %+v", err, pdb.Spec)
	}
	t.Run("the Services follow the active mgr", func(t *testing.T) { failover(t, ns) })
	t.Run("the modules are the cluster's", func(t *testing.T) { clusterModules(t, ns) })

	t.Run("delete cleans up", func(t *testing.T) {
		if out, err := env.kubectl(t, nil, "delete", "deployment", "-n", ns, "rook-ceph-mgr-b", "--wait=true", "--timeout=2m"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if _, err := env.Ceph(t.Context(), ns, "auth", "get-key", "mgr.b"); err == nil {
			t.Error("mgr.b's key is still in Ceph")
		}
		err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			for _, o := range []struct {
				obj  client.Object
				name string
			}{{&corev1.Secret{}, contract.KeyringSecretName("b")}} {
				if !apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.name}, o.obj)) {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Error("mgr b's keyring Secret was not garbage-collected")
		}
		// One mgr left: no PodDisruptionBudget (it would block every drain).
		err = wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rook-ceph-mgr-pdb"}, &policyv1.PodDisruptionBudget{})), nil
		})
		if err != nil {
			t.Error("the PodDisruptionBudget stayed with one mgr left")
		}
		// The cluster's Services stay with mgr a, their last owner.
		for _, name := range []string{contract.MetricsServiceName, contract.DashboardServiceName} {
			svc := &corev1.Service{}
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
				t.Errorf("Service %s went with mgr b: %v", name, err)
			} else if len(svc.OwnerReferences) != 1 || svc.OwnerReferences[0].Name != "rook-ceph-mgr-a" {
				t.Errorf("Service %s owners after mgr b went: %v; want mgr a only", name, svc.OwnerReferences)
			}
		}
		if cephKey(t, ns, "mgr.a") != keyA {
			t.Error("deleting mgr b touched mgr a's key")
		}
	})
}

// TestTwoCephClustersNeverMixed: mgr a of the second namespace belongs to the
// second cluster only.
func TestTwoCephClustersNeverMixed(t *testing.T) {
	west, east := env.Namespaces[0], env.Namespaces[1]
	explainOnFailure(t, east, "rook-ceph-mgr-a")
	apply(t, env.manifest(t, east, "a", map[string]string{contract.AnnotationModules: "prometheus"}))
	st := waitReady(t, east, "rook-ceph-mgr-a")
	d := deployment(t, east, "rook-ceph-mgr-a")
	if fsidOf(t, east) == fsidOf(t, west) || !strings.Contains(strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "), "--fsid="+fsidOf(t, east)) {
		t.Errorf("east's mgr does not run with east's fsid: %v", d.Spec.Template.Spec.Containers[0].Args)
	}
	keyEast := cephKey(t, east, "mgr.a")
	if keyEast == cephKey(t, west, "mgr.a") {
		t.Fatal("the two clusters' mgr.a keys are the same")
	}
	keyringHolds(t, east, "a", keyEast)
	out, err := env.Ceph(t.Context(), east, "mgr", "module", "ls")
	if err != nil {
		t.Fatal(err)
	}
	var ls struct {
		Enabled []string `json:"enabled_modules"`
	}
	_ = json.Unmarshal(out, &ls)
	if !contains(ls.Enabled, "prometheus") || contains(ls.Enabled, "dashboard") || contains(ls.Enabled, "rook") {
		t.Errorf("east enabled modules %v; want prometheus and not the west's dashboard or rook", ls.Enabled)
	}
	if !contains(st.Modules, "prometheus") || len(st.Modules) != 1 {
		t.Errorf("east status %+v", st)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

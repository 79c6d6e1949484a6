// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build node && kind

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

// TestKeyRotation: the policy's cephxKeys.generation raised to 2 for one
// namespace rotates the cephx keys of every mgr of that cluster of real pods
// (two of its own, and any an earlier test left there): each pod restarts on its new key,
// the standbys first and the active last, with exactly one change of active
// mgr and never more than 2 s without one (sampled every 200 ms). No key is
// anywhere but its Secret (Deployments, pods, Events, the CephRelease, the
// components' logs). Then a standby's key made of the insecure type, as a
// cluster from before Tentacle 20.2.4 holds it: Ceph raises
// AUTH_INSECURE_SERVICE_KEY_TYPE, the controller migrates that key (its pod
// restarts on it, no failover) and the health check clears.
func TestKeyRotation(t *testing.T) {
	ns := env.Teardown
	for _, id := range []string{"u", "v"} {
		createMgr(t, ns, id)
		explainOnFailure(t, ns, contract.DeploymentName(id))
	}
	ids := runningMgrs(t, ns)
	for _, id := range ids {
		waitReady(t, ns, contract.DeploymentName(id))
	}
	standbysRecorded(t, ns, len(ids)-1)
	before, _ := waitMgrMap(t, ns, fmt.Sprintf("mgrs %v, one active and the others standing by", ids), func(m mgrMap) bool {
		return m.Available && slices.Contains(ids, m.ActiveName) && len(m.Standbys) == len(ids)-1
	})
	oldKeys := map[string]string{}
	for _, id := range ids {
		oldKeys[id] = cephKey(t, ns, "mgr."+id)
	}
	pods := podUIDs(t, ns, ids)

	stop := watchMgrStat(t, ns)
	start := time.Now()
	setKeyGeneration(t, 2, ns)
	rolledOut(t, ns, ids, pods, time.Duration(len(ids))*3*time.Minute)
	for _, id := range ids {
		d := deployment(t, ns, contract.DeploymentName(id))
		st, err := mgrstatus.Of(d)
		if err != nil || st.KeyGeneration != 2 || d.Spec.Template.Annotations[contract.AnnotationCephxKeyGeneration] != "2" {
			t.Errorf("mgr %s: status %+v (%v), template annotations %v; want generation 2", id, st, err, d.Spec.Template.Annotations)
		}
	}
	a := availabilityOf(stop())
	t.Logf("rotation of %v's keys (active %s before): %s; active changes %v, longest without an available mgr %s, %d failed samples",
		ids, before.ActiveName, time.Since(start).Round(time.Second), a.changes, a.longest.Round(10*time.Millisecond), a.failed)
	if len(a.changes) != 1 {
		t.Errorf("active mgr changes %v during the rotation; want exactly one", a.changes)
	}
	if a.longest > 2*time.Second {
		t.Errorf("no mgr available for %s during the rotation; want at most 2s", a.longest)
	}
	if a.failed > 0 {
		t.Errorf("%d samples of the mgr map failed: the measure has holes", a.failed)
	}
	keys := map[string]string{}
	for _, id := range ids {
		keys["mgr."+id] = cephKey(t, ns, "mgr."+id)
		if keys["mgr."+id] == oldKeys[id] {
			t.Errorf("mgr.%s's key did not change", id)
		}
		sec := &corev1.Secret{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: contract.KeyringSecretName(id)}, sec); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(sec.Data[contract.KeyringKey]), "key = "+keys["mgr."+id]+"\n") {
			t.Errorf("Secret %s does not hold mgr.%s's new key", sec.Name, id)
		}
	}

	// A standby's key of the insecure type: the mons are let make one.
	m, _ := waitMgrMap(t, ns, "one active and the others standing by", func(m mgrMap) bool {
		return m.Available && len(m.Standbys) == len(ids)-1
	})
	x := m.Standbys[0].Name
	if _, err := env.Ceph(t.Context(), ns, "mon", "set", "auth_allowed_ciphers", "aes,aes256k"); err != nil {
		t.Fatal(err)
	}
	var made error
	// The mons allow it once the new monmap is theirs: asked until then.
	if err := wait.PollUntilContextTimeout(t.Context(), 2*time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, made = env.Ceph(ctx, ns, "auth", "rotate", "mgr."+x, "--key_type", "aes")
		return made == nil, nil
	}); err != nil {
		t.Fatalf("mgr.%s's key of type aes: %v", x, made)
	}
	stop = watchMgrStat(t, ns)
	xPod := mgrPod(t, ns, x).UID
	deadline := time.Now().Add(5 * time.Minute)
	var health string
	for {
		out, err := env.Ceph(t.Context(), ns, "health", "detail")
		health = fmt.Sprintf("%s%v", out, err)
		if err == nil && !strings.Contains(string(out), "AUTH_INSECURE_SERVICE_KEY_TYPE") {
			break
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("AUTH_INSECURE_SERVICE_KEY_TYPE still raised 5m after mgr.%s's key was made insecure: %s", x, health)
		}
		time.Sleep(2 * time.Second)
	}
	// Its pod restarted on the migrated key (a standby: released at once).
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: contract.DeploymentName(x)}, d); err != nil {
			return false, nil
		}
		st := d.Status
		if d.Spec.Paused || st.ObservedGeneration < d.Generation || st.UpdatedReplicas != 1 || st.ReadyReplicas != 1 || st.Replicas != 1 {
			return false, nil
		}
		pods := &corev1.PodList{}
		if err := env.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{contract.LabelMgrID: x}); err != nil {
			return false, nil
		}
		return !slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return p.UID == xPod }), nil
	})
	if err != nil {
		stop()
		t.Fatalf("mgr %s's pod never restarted on its migrated key", x)
	}
	waitMgrMap(t, ns, "every mgr back, one active", func(m mgrMap) bool {
		return m.Available && len(m.Standbys) == len(ids)-1
	})
	a = availabilityOf(stop())
	if len(a.changes) != 0 {
		t.Errorf("active mgr changes %v while standby %s's key was migrated; want none", a.changes, x)
	}
	keys["mgr."+x] = cephKey(t, ns, "mgr."+x)
	if typ, err := cephtest.KeyType(keys["mgr."+x]); err != nil || typ != cephtest.KeyTypeAES256K {
		t.Errorf("mgr.%s's key is of type %d (%v) after the migration, want 2 (aes256k)", x, typ, err)
	}
	if st, _ := mgrstatus.Of(deployment(t, ns, contract.DeploymentName(x))); st.KeyGeneration != 3 {
		t.Errorf("mgr %s's status %+v after the migration, want generation 3", x, st)
	}
	noKeyOutsideSecrets(t, ns, keys)
}

// runningMgrs are the ids of ns's mgr Deployments with a replica.
func runningMgrs(t *testing.T, ns string) []string {
	t.Helper()
	ds := &appsv1.DeploymentList{}
	if err := env.Client.List(t.Context(), ds, client.InNamespace(ns), client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range ds.Items {
		if d.Spec.Replicas == nil || *d.Spec.Replicas > 0 {
			ids = append(ids, contract.MgrID(&d))
		}
	}
	slices.Sort(ids)
	return ids
}

// setKeyGeneration makes MgrPolicy default the installed policy file with
// cephxKeys.generation set for namespace ns (the controller and the webhook
// watch it), and removes it when the test ends: the file is in force again.
func setKeyGeneration(t *testing.T, gen int64, ns string) {
	t.Helper()
	cm, err := env.kubectl(t, nil, "get", "-n", systemNamespace, "deployment", "mgr-webhook", "-o", `jsonpath={.spec.template.spec.volumes[?(@.name=="policy")].configMap.name}`)
	if err != nil || cm == "" {
		t.Fatalf("the webhook's policy ConfigMap: %v %s", err, cm)
	}
	file, err := env.kubectl(t, nil, "get", "-n", systemNamespace, "configmap", cm, "-o", `jsonpath={.data.policy\.yaml}`)
	if err != nil || file == "" {
		t.Fatalf("policy.yaml of ConfigMap %s: %v %s", cm, err, file)
	}
	p, err := mutate.ParsePolicy([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	p.CephxKeys.Generation, p.CephxKeys.Namespaces = gen, []string{ns}
	mp, _ := json.Marshal(map[string]any{"apiVersion": "mgr.ceph.rook.io/v1alpha1", "kind": "MgrPolicy", "metadata": map[string]string{"name": "default"}, "spec": p.PolicySpec})
	if out, err := env.kubectl(t, mp, "apply", "-f", "-"); err != nil {
		t.Fatalf("MgrPolicy default: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := env.kubectl(t, nil, "delete", "mgrpolicies.mgr.ceph.rook.io", "default", "--ignore-not-found"); err != nil {
			t.Errorf("removing MgrPolicy default: %v\n%s", err, out)
		}
	})
}

// noKeyOutsideSecrets fails when a key of keys (as it is, or base64-encoded)
// is in ns's Deployments, ReplicaSets, pods or Events, the cluster's
// CephRelease, or the logs of the install's components.
func noKeyOutsideSecrets(t *testing.T, ns string, keys map[string]string) {
	t.Helper()
	haystacks := map[string]string{}
	for _, args := range [][]string{
		{"get", "-n", ns, "deployments,replicasets,pods,events", "-o", "json"},
		{"get", "cephreleases.mgr.ceph.rook.io", ns, "-o", "json"},
	} {
		out, err := env.kubectl(t, nil, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		haystacks["kubectl "+strings.Join(args, " ")] = out
	}
	logs, err := env.Logs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) < 2 {
		t.Fatalf("%d component logs: the webhook's and the controller's are not all there", len(logs))
	}
	for where, text := range logs {
		haystacks["log "+where] = text
	}
	for entity, k := range keys {
		for _, v := range []string{k, base64.StdEncoding.EncodeToString([]byte(k))} {
			for where, text := range haystacks {
				if strings.Contains(text, v) {
					t.Errorf("the key of %s is in %s", entity, where)
				}
			}
		}
	}
}

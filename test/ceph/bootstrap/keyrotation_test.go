// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
)

// TestKeyRotation: the policy's cephxKeys.generation raised to 2 rotates
// the keys of a cluster's two mgrs once each, the standby's first: in Ceph,
// in their keyring Secrets (and nowhere else: no Event or status holds a
// key), the pod template annotation and the status at generation 2, and
// nothing rotated again after. A key Ceph reports of an insecure type
// (AUTH_INSECURE_SERVICE_KEY_TYPE, made here as an upgraded cluster has it)
// is rotated to the secure type and the health check clears, the other
// mgr's keys untouched. Below Squid 19.2.3 the rotation is refused with a
// status and a Warning Event, and no key changes.
func TestKeyRotation(t *testing.T) {
	ctx := t.Context()
	const ns = nsKeys
	c := clusterOf(t, ns, cephtest.Options{MgrIDs: []string{"a", "b"}})
	key := func(entity string) string {
		t.Helper()
		out, err := c.Ceph(ctx, "auth", "get-key", entity)
		if err != nil {
			t.Fatalf("ceph auth get-key %s: %v", entity, err)
		}
		var k struct{ Key string }
		if err := json.Unmarshal(out, &k); err != nil || k.Key == "" {
			t.Fatalf("ceph auth get-key %s: %q, %v", entity, out, err)
		}
		return k.Key
	}
	defer removeMgrPolicy(t)
	updateMgrPolicy(t, ns, func(*v1alpha1.PolicySpec) {})

	ids := []string{"a", "b"}
	for _, id := range ids {
		d := mgrDeployment(t, ns, id, 1, nil)
		if err := k8s.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = k8s.Delete(context.Background(), d)
			eventually(t, time.Minute, "mgr "+id+"'s Deployment gone", func(ctx context.Context) (bool, error) {
				return apierrors.IsNotFound(get(ctx, ns, d.Name, d)), nil
			})
		}()
	}
	// The keys each mgr owns: mgr.<id>, and its server_addr key where its
	// pod mounts one.
	entities := map[string][]string{}
	for _, id := range ids {
		waitPhase(t, ns, contract.DeploymentName(id), mgrstatus.PhaseReady, 4*time.Minute)
		entities[id] = []string{"mgr." + id}
		if err := get(ctx, ns, contract.ServerAddrKeyringSecretName(id), &corev1.Secret{}); err == nil {
			entities[id] = append(entities[id], contract.ServerAddrEntity(id))
		}
	}
	before := map[string]string{}
	for _, id := range ids {
		for _, e := range entities[id] {
			before[e] = key(e)
		}
	}
	rotations := func() float64 {
		return metric(t, "mgr_bootstrap_ceph_calls_total", map[string]string{"command": "auth rotate"})
	}
	rotated0 := rotations()
	// This cluster's keys alone: the suite's other clusters run mgr daemons
	// with keys the harness wrote.
	updateMgrPolicy(t, ns, func(s *v1alpha1.PolicySpec) { s.CephxKeys.Generation, s.CephxKeys.Namespaces = 2, []string{ns} })

	if rel := cephRelease(t); !(rel.Major > 19 || (rel.Major == 19 && (rel.Minor > 2 || rel.Patch >= 3))) {
		for _, id := range ids {
			name := contract.DeploymentName(id)
			eventually(t, time.Minute, "mgr "+id+"'s rotation blocked", func(context.Context) (bool, error) {
				st := status(t, ns, name)
				return strings.HasPrefix(st.KeyRotation, "blocked: rotating a key in place (ceph auth rotate) needs every mon and mgr on Ceph 19.2.3 or later"),
					fmt.Errorf("keyRotation %q", st.KeyRotation)
			})
			if note := waitEvent(t, ns, name, bootstrap.ReasonKeyRotationBlocked, time.Minute); !strings.Contains(note, "mons run "+rel.String()) {
				t.Errorf("mgr %s: Event %q does not name the mons' release", id, note)
			}
		}
		for e, k := range before {
			if key(e) != k {
				t.Errorf("Ceph %s: the key of %s changed", rel, e)
			}
		}
		if n := rotations() - rotated0; n != 0 {
			t.Errorf("Ceph %s: %v auth rotate calls, want none", rel, n)
		}
		return
	}

	for _, id := range ids {
		name := contract.DeploymentName(id)
		eventually(t, 2*time.Minute, "mgr "+id+"'s keys at generation 2", func(ctx context.Context) (bool, error) {
			d := &appsv1.Deployment{}
			if err := get(ctx, ns, name, d); err != nil {
				return false, err
			}
			st, err := mgrstatus.Of(d)
			ann := d.Spec.Template.Annotations[contract.AnnotationCephxKeyGeneration]
			return err == nil && st.KeyGeneration == 2 && ann == "2", fmt.Errorf("status %+v (%v), annotation %q", st, err, ann)
		})
	}
	after := map[string]string{}
	for _, id := range ids {
		for _, e := range entities[id] {
			after[e] = key(e)
			if after[e] == before[e] {
				t.Errorf("the key of %s did not change", e)
			}
		}
		sec := &corev1.Secret{}
		if err := get(ctx, ns, contract.KeyringSecretName(id), sec); err != nil {
			t.Fatal(err)
		}
		if kr := string(sec.Data[contract.KeyringKey]); !strings.Contains(kr, "key = "+after["mgr."+id]+"\n") {
			t.Errorf("Secret %s does not hold mgr.%s's new key", sec.Name, id)
		}
	}
	// The standby's keys first, then the active's (the harness's first mgr).
	rotatedAt := keyRotatedEvents(t, ns)
	if !rotatedAt[contract.DeploymentName("b")].Before(rotatedAt[contract.DeploymentName("a")]) {
		t.Errorf("KeyRotated Events at %v: want the standby b's before the active a's", rotatedAt)
	}
	// Once each, and not again.
	want := float64(len(before))
	if n := rotations() - rotated0; n != want {
		t.Errorf("%v auth rotate calls, want one per key (%v)", n, want)
	}
	time.Sleep(3 * releaseInterval)
	if n := rotations() - rotated0; n != want {
		t.Errorf("%v auth rotate calls after a while, want still %v", n, want)
	}
	noKeysOutsideSecrets(t, ns, after)

	// An insecure key, as a cluster upgraded from before Tentacle 20.2.4
	// has it: the mons are let make one, and mgr.b gets one.
	if _, err := c.Ceph(ctx, "mon", "set", "auth_allowed_ciphers", "aes,aes256k"); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "mgr.b's key of type aes", func(ctx context.Context) (bool, error) {
		_, err := c.Ceph(ctx, "auth", "rotate", "mgr.b", "--key_type", "aes")
		return err == nil, err
	})
	if typ, err := cephtest.KeyType(key("mgr.b")); err != nil || typ != cephtest.KeyTypeAES {
		t.Fatalf("mgr.b's key is of type %d (%v), want 1 (aes)", typ, err)
	}
	eventually(t, 2*time.Minute, "mgr b's keys rotated again (generation 3), AUTH_INSECURE_SERVICE_KEY_TYPE gone", func(ctx context.Context) (bool, error) {
		st := status(t, ns, contract.DeploymentName("b"))
		if st.KeyGeneration != 3 {
			return false, fmt.Errorf("status %+v", st)
		}
		out, err := c.Ceph(ctx, "health", "detail")
		return err == nil && !strings.Contains(string(out), "AUTH_INSECURE_SERVICE_KEY_TYPE"), fmt.Errorf("%s: %v", out, err)
	})
	if typ, err := cephtest.KeyType(key("mgr.b")); err != nil || typ != cephtest.KeyTypeAES256K {
		t.Errorf("mgr.b's key is of type %d (%v) after the migration, want 2 (aes256k)", typ, err)
	}
	if note := eventReasons(t, ns, contract.DeploymentName("b"))[bootstrap.ReasonKeyRotated]; !strings.Contains(note, "AUTH_INSECURE_SERVICE_KEY_TYPE") {
		t.Errorf("KeyRotated Event %q does not say why", note)
	}
	if st := status(t, ns, contract.DeploymentName("a")); st.KeyGeneration != 2 || key("mgr.a") != after["mgr.a"] {
		t.Errorf("mgr a's keys rotated with b's migration: status %+v", st)
	}
}

// keyRotatedEvents is when each Deployment of ns got its KeyRotated Event.
func keyRotatedEvents(t *testing.T, ns string) map[string]time.Time {
	t.Helper()
	evs := &eventsv1.EventList{}
	if err := k8s.List(context.Background(), evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]time.Time{}
	for _, e := range evs.Items {
		if e.Reason == bootstrap.ReasonKeyRotated {
			out[e.Regarding.Name] = e.EventTime.Time
		}
	}
	return out
}

// noKeysOutsideSecrets fails when a key of keys is in an Event or a mgr
// Deployment of ns (its status annotation included).
func noKeysOutsideSecrets(t *testing.T, ns string, keys map[string]string) {
	t.Helper()
	evs := &eventsv1.EventList{}
	ds := &appsv1.DeploymentList{}
	if err := k8s.List(context.Background(), evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := k8s.List(context.Background(), ds, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	text, _ := json.Marshal([]any{evs, ds})
	for e, k := range keys {
		if strings.Contains(string(text), k) {
			t.Errorf("the key of %s is in an Event or a Deployment", e)
		}
	}
}

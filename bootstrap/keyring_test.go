// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/cluster"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/policy"
)

// keyStore is a Ceph of one auth database: entity -> caps.
type keyStore struct {
	Ceph
	keys      map[string]string
	calls     []string
	removeErr error // what RemoveKey answers
}

func (k *keyStore) RemoveKey(_ context.Context, _ ceph.Conn, entity string) error {
	k.calls = append(k.calls, "rm")
	if k.removeErr != nil {
		return k.removeErr
	}
	delete(k.keys, entity)
	return nil
}

func (k *keyStore) GetKey(_ context.Context, _ ceph.Conn, entity string) (string, error) {
	k.calls = append(k.calls, "get-key")
	if _, ok := k.keys[entity]; !ok {
		return "", &ceph.Error{Command: "auth get-key", Errno: syscall.ENOENT}
	}
	return "AQkey-" + entity, nil
}

func (k *keyStore) GetOrCreateKey(_ context.Context, _ ceph.Conn, entity string, caps []string) (string, error) {
	k.calls = append(k.calls, "get-or-create-key")
	if have, ok := k.keys[entity]; ok && have != strings.Join(caps, " ") {
		return "", &ceph.Error{Command: "auth get-or-create-key", Errno: syscall.EINVAL}
	}
	k.keys[entity] = strings.Join(caps, " ")
	return "AQkey-" + entity, nil
}

func (k *keyStore) SetCaps(_ context.Context, _ ceph.Conn, entity string, caps []string) error {
	k.calls = append(k.calls, "caps")
	k.keys[entity] = strings.Join(caps, " ")
	return nil
}

// TestKeyOwnership: the controller uses, re-caps and records as its own only
// a key it created, or one the policy lets it adopt; a key that existed
// before is left exactly as it was, with an error naming the choice.
func TestKeyOwnership(t *testing.T) {
	caps := []string{"mon", "allow profile mgr"}
	for name, tc := range map[string]struct {
		existing  string // caps of mgr.a before; "" for no key
		owned     bool   // the sealed status records the key as ours
		adopt     []string
		wantErr   error
		wantOwned bool
		wantCalls []string
	}{
		"no key: created":                        {"", false, nil, nil, true, []string{"get-key", "get-or-create-key"}},
		"someone else's key":                     {"mon allow *", false, nil, errKeyNotOurs, false, []string{"get-key"}},
		"someone else's key, adoption elsewhere": {"mon allow profile mgr", false, []string{"elsewhere"}, errKeyNotOurs, false, []string{"get-key"}},
		"ours, other caps: repaired":             {"mon allow *", true, nil, nil, true, []string{"get-key", "get-or-create-key", "caps", "get-key"}},
		"someone else's, adoption allowed":       {"mon allow *", false, []string{"rook-ceph"}, nil, true, []string{"get-key", "get-or-create-key", "caps", "get-key"}},
		"someone else's, adoption everywhere":    {"mon allow *", false, []string{"*"}, nil, true, []string{"get-key", "get-or-create-key", "caps", "get-key"}},
	} {
		t.Run(name, func(t *testing.T) {
			ks := &keyStore{keys: map[string]string{}}
			if tc.existing != "" {
				ks.keys["mgr.a"] = tc.existing
			}
			d := mgr("rook-ceph-mgr-a", "a", "uid-a")
			cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(d).Build()
			rec := events.NewFakeRecorder(8)
			r := &Reconciler{Client: cl, APIReader: cl, Ceph: ks, Clusters: cluster.New(cl, ks, nil, 0), Recorder: rec,
				Options: Options{Caps: caps, AdoptExistingKeys: tc.adopt}}
			s := &scope{d: d, id: "a", c: &ceph.Conn{}, prev: mgrstatus.Status{KeyOwned: tc.owned}}
			s.next = s.prev
			err := r.ensureKeyring(t.Context(), s)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if s.next.KeyOwned != tc.wantOwned {
				t.Errorf("KeyOwned %v, want %v", s.next.KeyOwned, tc.wantOwned)
			}
			if !slices.Equal(ks.calls, tc.wantCalls) {
				t.Errorf("ceph calls %v, want %v", ks.calls, tc.wantCalls)
			}
			sec := &corev1.Secret{}
			serr := cl.Get(t.Context(), client.ObjectKey{Namespace: "rook-ceph", Name: "rook-ceph-mgr-a-keyring"}, sec)
			if tc.wantErr == nil {
				// The Secret holds the key, is the mgr's, and says so in an Event.
				if serr != nil || !metav1.IsControlledBy(sec, d) || !strings.Contains(string(sec.Data[contract.KeyringKey])+sec.StringData[contract.KeyringKey], "key = AQkey-mgr.a") {
					t.Errorf("keyring Secret %v: controlled by the mgr %v, data %q", serr, metav1.IsControlledBy(sec, d), sec.StringData)
				}
				var last string
				for len(rec.Events) > 0 {
					last = <-rec.Events
				}
				if !strings.Contains(last, ReasonKeyringCreated) {
					t.Errorf("last event %q, want %s", last, ReasonKeyringCreated)
				}
			} else if !apierrors.IsNotFound(serr) {
				t.Errorf("a keyring Secret was made for a key not ours: %v", serr)
			}
			if tc.wantErr != nil {
				if ks.keys["mgr.a"] != tc.existing {
					t.Errorf("the key's caps changed to %q", ks.keys["mgr.a"])
				}
				if !strings.Contains(err.Error(), "ceph auth rm mgr.a") || !strings.Contains(err.Error(), "adoptExistingKeys") {
					t.Errorf("error %q names neither way out", err)
				}
			}
		})
	}
}

// TestDeletionNotHeldByAMissingStatusKey: while the status key cannot be
// loaded the controller acts on nothing, but a deleted mgr is let go after
// the finalizer timeout, its key kept (no ceph call) and the command to run
// named; before the timeout it waits.
func TestDeletionNotHeldByAMissingStatusKey(t *testing.T) {
	for name, tc := range map[string]struct {
		deletedAgo time.Duration
		released   bool
	}{
		"within the finalizer timeout": {time.Second, false},
		"past the finalizer timeout":   {3 * time.Minute, true},
	} {
		t.Run(name, func(t *testing.T) {
			d := mgr("rook-ceph-mgr-a", "a", "uid-a")
			d.Finalizers = []string{contract.FinalizerCephxKey}
			d.DeletionTimestamp = &metav1.Time{Time: time.Now().Add(-tc.deletedAgo)}
			cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(d).Build()
			rec := events.NewFakeRecorder(8)
			r := &Reconciler{Client: cl, APIReader: cl, Clusters: cluster.New(cl, nil, nil, 0), Recorder: rec, status: &mgrstatus.Store{Client: cl, Reader: cl}, Options: Options{FinalizerTimeout: 2 * time.Minute}}
			res, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(d)})
			if err != nil {
				t.Fatal(err)
			}
			got := &appsv1.Deployment{}
			gone := apierrors.IsNotFound(cl.Get(t.Context(), client.ObjectKeyFromObject(d), got))
			if gone != tc.released {
				t.Fatalf("released %v (finalizers %v, requeue %v), want %v", gone, got.Finalizers, res.RequeueAfter, tc.released)
			}
			if tc.released {
				if e := <-rec.Events; !strings.Contains(e, ReasonKeyRemovalAbandoned) || !strings.Contains(e, "ceph auth rm mgr.a") {
					t.Errorf("event %q", e)
				}
			} else if res.RequeueAfter == 0 {
				t.Error("not looked at again")
			}
		})
	}
}

func TestKeyringSecret(t *testing.T) {
	for name, tc := range map[string]struct {
		caps []string
		want string
	}{
		"rook's caps": {contract.DefaultCaps, "[mgr.a]\n\tkey = AQB==\n\tcaps mon = \"allow profile mgr\"\n\tcaps mds = \"allow *\"\n\tcaps osd = \"allow *\"\n"},
		"seed's caps": {contract.SeedCaps, "[mgr.a]\n\tkey = AQB==\n\tcaps mon = \"allow *\"\n\tcaps mds = \"allow *\"\n\tcaps osd = \"allow *\"\n"},
		"no caps":     {nil, "[mgr.a]\n\tkey = AQB==\n"},
		// A capability without its value is left out, never read past.
		"an unpaired cap": {[]string{"mon", "allow profile mgr", "osd"}, "[mgr.a]\n\tkey = AQB==\n\tcaps mon = \"allow profile mgr\"\n"},
	} {
		t.Run(name, func(t *testing.T) {
			s := keyringSecret(mgr("rook-ceph-mgr-a", "a", "uid-a"), "a", contract.KeyringSecretName("a"), keyringFile("mgr.a", "AQB==", tc.caps))
			if got := s.StringData[contract.KeyringKey]; got != tc.want {
				t.Errorf("keyring:\n%s\nwant:\n%s", got, tc.want)
			}
			if s.Name != "rook-ceph-mgr-a-keyring" || s.Namespace != "rook-ceph" || s.Type != corev1.SecretTypeOpaque {
				t.Errorf("Secret %s/%s type %s", s.Namespace, s.Name, s.Type)
			}
			if s.Labels[contract.LabelApp] != contract.AppName || s.Labels[contract.LabelMgrID] != "a" || s.Labels[contract.LabelRookCluster] != "rook-ceph" {
				t.Errorf("labels %v: the controller's cache selects app=rook-ceph-mgr", s.Labels)
			}
		})
	}
}

// TestServerAddrKey: a mgr whose pod mounts the server_addr init containers'
// keyring Secret gets that key, with caps for its own two server_addr
// options only, under the same ownership rules as its mgr key; a mgr that
// does not mount it gets no such key, nor one that mounts it where the
// policy runs no such init containers (an editor's volume steers no ceph write).
func TestServerAddrKey(t *testing.T) {
	entity, secretName := contract.ServerAddrEntity("a"), contract.ServerAddrKeyringSecretName("a")
	wantCaps := strings.Join(contract.ServerAddrCaps("a"), " ")
	off := mutate.DefaultPolicy()
	off.ServerAddrInitContainers.Enabled = ptrTo(false)
	for name, tc := range map[string]struct {
		mounts    bool
		policyOff bool   // the policy runs no server_addr init containers
		existing  string // caps of the server_addr key before; "" for none
		owned     bool
		wantErr   error
		wantOwned bool
	}{
		"mounted, no key: created":        {mounts: true, wantOwned: true},
		"mounted, the policy's off":       {mounts: true, policyOff: true},
		"mounted, someone else's key":     {mounts: true, existing: "mon allow *", wantErr: errKeyNotOurs},
		"mounted, ours with other caps":   {mounts: true, existing: "mon allow *", owned: true, wantOwned: true},
		"not mounted: no key, no Secret":  {},
		"not mounted, someone else's key": {existing: "mon allow *"},
	} {
		t.Run(name, func(t *testing.T) {
			ks := &keyStore{keys: map[string]string{}}
			if tc.existing != "" {
				ks.keys[entity] = tc.existing
			}
			d := mgr("rook-ceph-mgr-a", "a", "uid-a")
			if tc.mounts {
				d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "k", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secretName}}}}
			}
			cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(d).Build()
			r := &Reconciler{Client: cl, APIReader: cl, Ceph: ks, Clusters: cluster.New(cl, ks, nil, 0), Recorder: events.NewFakeRecorder(8), Options: Options{Caps: contract.DefaultCaps}}
			if tc.policyOff {
				r.Policy = policy.Static(off)
			}
			s := &scope{d: d, id: "a", c: &ceph.Conn{}, prev: mgrstatus.Status{ServerAddrKeyOwned: tc.owned}}
			s.next = s.prev
			err := r.ensureKeyring(t.Context(), s)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if s.next.ServerAddrKeyOwned != tc.wantOwned {
				t.Errorf("ServerAddrKeyOwned %v, want %v", s.next.ServerAddrKeyOwned, tc.wantOwned)
			}
			sec := &corev1.Secret{}
			serr := cl.Get(t.Context(), client.ObjectKey{Namespace: "rook-ceph", Name: secretName}, sec)
			if !tc.mounts || tc.policyOff || tc.wantErr != nil {
				if !apierrors.IsNotFound(serr) {
					t.Errorf("Secret %s made: %v", secretName, serr)
				}
				if ks.keys[entity] != tc.existing {
					t.Errorf("key %s caps %q, was %q", entity, ks.keys[entity], tc.existing)
				}
				return
			}
			if ks.keys[entity] != wantCaps {
				t.Errorf("key %s caps %q, want %q", entity, ks.keys[entity], wantCaps)
			}
			want := "[" + entity + "]\n\tkey = AQkey-" + entity + "\n"
			if serr != nil || !metav1.IsControlledBy(sec, d) || sec.StringData[contract.KeyringKey] != want {
				t.Errorf("Secret %s: %v, controlled by the mgr %v, keyring %q, want %q", secretName, serr, metav1.IsControlledBy(sec, d), sec.StringData[contract.KeyringKey], want)
			}
			if _, ok := ks.keys["mgr.a"]; !ok {
				t.Error("the mgr's own key was not made")
			}
		})
	}
}

// TestServerAddrCaps: the init containers' key may run `config set` of its
// own mgr's two server_addr options, and nothing else (Ceph's command caps;
// TestServerAddrKeyOnCeph in test/ceph/bootstrap tries it on real Ceph).
func TestServerAddrCaps(t *testing.T) {
	want := []string{"mon", `allow command "config set" with who=mgr.b name=mgr/dashboard/b/server_addr, allow command "config set" with who=mgr.b name=mgr/prometheus/b/server_addr`}
	if got := contract.ServerAddrCaps("b"); !slices.Equal(got, want) {
		t.Errorf("caps %q, want %q", got, want)
	}
}

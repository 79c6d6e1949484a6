// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// cephxKey is one of a mgr's cephx keys and the Secret that carries it.
type cephxKey struct {
	entity, secret string
	caps           []string
	// fileCaps are the caps written into the keyring file (informational:
	// a client needs only the key); nil writes the key alone.
	fileCaps []string
	// owned is the sealed status's record that the controller created the
	// key; own records it in the status the reconcile writes.
	owned bool
	own   *bool
}

// keys are the cephx keys of the mgr in s: its own (mgr.<id>, Rook's) and
// the key of its server_addr init containers, which may set the mgr's two
// server_addr options and nothing else (contract.ServerAddrCaps), when both
// the policy runs those containers (an editor's volume alone makes no key)
// and the pod template mounts that key's Secret (a mgr completed without
// them needs none).
func (r *Reconciler) keys(s *scope) []cephxKey {
	keys := []cephxKey{{entity: "mgr." + s.id, secret: contract.KeyringSecretName(s.id), caps: r.Caps, fileCaps: r.Caps,
		owned: s.prev.KeyOwned, own: &s.next.KeyOwned}}
	if r.serverAddrInit() && mountsSecret(s.d, contract.ServerAddrKeyringSecretName(s.id)) {
		keys = append(keys, cephxKey{entity: contract.ServerAddrEntity(s.id), secret: contract.ServerAddrKeyringSecretName(s.id),
			caps: contract.ServerAddrCaps(s.id), owned: s.prev.ServerAddrKeyOwned, own: &s.next.ServerAddrKeyOwned})
	}
	return keys
}

func mountsSecret(d *appsv1.Deployment, name string) bool {
	return slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Secret != nil && v.Secret.SecretName == name
	})
}

// ensureKeyring creates the keyring Secret of each of the mgr's keys
// (ensureKey).
func (r *Reconciler) ensureKeyring(ctx context.Context, s *scope) error {
	for _, k := range r.keys(s) {
		if err := r.ensureKey(ctx, s, k); err != nil {
			return err
		}
	}
	return nil
}

// ensureKey creates Secret k.secret from the cluster's key for k.entity.
// The controller creates that key when Ceph has none and records so (k.own,
// in its sealed status); a key that existed before belongs to someone else
// (a mgr run by other tooling) and is neither used, re-capped nor later
// removed, unless the policy allows adoption (AdoptExistingKeys of its
// namespace). Only an owned key's caps are repaired (EINVAL).
func (r *Reconciler) ensureKey(ctx context.Context, s *scope, k cephxKey) error {
	d := s.d
	// Metadata only: the cache holds no Secret's data (CacheOptions).
	have := &metav1.PartialObjectMetadata{}
	have.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: k.secret}, have)
	if err == nil {
		if !metav1.IsControlledBy(have, d) {
			return notOwned(d, "Secret", have)
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	conn, err := r.conn(ctx, s)
	if err != nil {
		return err
	}
	entity := k.entity
	_, err = r.Ceph.GetKey(ctx, conn, entity)
	creating, adopting := ceph.IsNotFound(err), false
	switch {
	case creating:
	case err != nil:
		return err
	case k.owned:
	case r.adopts(d.Namespace):
		adopting = true
	default:
		return fmt.Errorf("%w: cephx key %s exists in Ceph, and this controller did not create it: it is neither used, re-capped nor removed. If no other mgr uses it, remove it (ceph auth rm %s) and the controller makes a new one; or let the policy adopt existing keys of this namespace (adoptExistingKeys: [%s])",
			errKeyNotOurs, entity, entity, d.Namespace)
	}
	key, err := r.Ceph.GetOrCreateKey(ctx, conn, entity, k.caps)
	if ceph.IsInvalid(err) {
		// An owned key with other caps: make them ours rather than fail forever.
		if err = r.Ceph.SetCaps(ctx, conn, entity, k.caps); err == nil {
			r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonKeyCapsRepaired, "Repair", "cephx key %s had other caps; caps set to %v", entity, k.caps)
			key, err = r.Ceph.GetKey(ctx, conn, entity)
		}
	}
	if err != nil {
		return err
	}
	if creating || adopting {
		*k.own = true
		if s.next.KeySince == "" {
			// The age a rotateAfter policy counts from.
			s.next.KeySince = time.Now().UTC().Format(time.RFC3339)
		}
	}
	if adopting {
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonKeyAdopted, "Adopt", "cephx key %s existed; adopted as the policy allows (adoptExistingKeys): it is re-capped and removed with this Deployment", entity)
	}
	secret := keyringSecret(d, s.id, k.secret, keyringFile(entity, key, k.fileCaps))
	if err := controllerutil.SetControllerReference(d, secret, r.Client.Scheme()); err != nil {
		return err
	}
	apiWrites.Inc()
	if err := r.Client.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	r.Recorder.Eventf(d, secret, corev1.EventTypeNormal, ReasonKeyringCreated, "Create", "Secret %s holds the cephx key of %s", secret.Name, entity)
	return nil
}

// keyringFile is the keyring of entity, in Rook's format.
func keyringFile(entity, key string, caps []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s]\n\tkey = %s\n", entity, key)
	for i := 0; i+1 < len(caps); i += 2 {
		fmt.Fprintf(&b, "\tcaps %s = %q\n", caps[i], caps[i+1])
	}
	return b.String()
}

// ownedLabels mark what the controller creates for mgr id; its cache selects
// on app=rook-ceph-mgr, so these objects are all it watches.
func ownedLabels(id, namespace string) map[string]string {
	return map[string]string{contract.LabelApp: contract.AppName, contract.LabelMgrID: id, contract.LabelRookCluster: namespace}
}

func keyringSecret(d *appsv1.Deployment, id, name, keyring string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.Namespace, Labels: ownedLabels(id, d.Namespace)},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{contract.KeyringKey: keyring},
	}
}

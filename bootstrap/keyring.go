// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// ensureKeyring creates Secret rook-ceph-mgr-<id>-keyring from the cluster's
// key for mgr.<id>. The controller creates that key when Ceph has none and
// records so (next.KeyOwned, in its sealed status); a key that existed before
// belongs to someone else (a mgr run by other tooling) and is neither used,
// re-capped nor later removed, unless the policy allows adoption
// (AdoptExistingKeys of its namespace). Only an owned key's caps are repaired (EINVAL).
func (r *Reconciler) ensureKeyring(ctx context.Context, s *scope) error {
	d, id := s.d, s.id
	// Metadata only: the cache holds no Secret's data (CacheOptions).
	have := &metav1.PartialObjectMetadata{}
	have.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: contract.KeyringSecretName(id)}, have)
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
	entity := "mgr." + id
	_, err = r.Ceph.GetKey(ctx, conn, entity)
	creating, adopting := ceph.IsNotFound(err), false
	switch {
	case creating:
	case err != nil:
		return err
	case s.prev.KeyOwned:
	case r.adopts(d.Namespace):
		adopting = true
	default:
		return fmt.Errorf("%w: cephx key %s exists in Ceph, and this controller did not create it: it is neither used, re-capped nor removed. If no other mgr uses it, remove it (ceph auth rm %s) and the controller makes a new one; or let the policy adopt existing keys of this namespace (adoptExistingKeys: [%s])",
			errKeyNotOurs, entity, entity, d.Namespace)
	}
	key, err := r.Ceph.GetOrCreateKey(ctx, conn, entity, r.Caps)
	if ceph.IsInvalid(err) {
		// An owned key with other caps: make them ours rather than fail forever.
		if err = r.Ceph.SetCaps(ctx, conn, entity, r.Caps); err == nil {
			r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonKeyCapsRepaired, "Repair", "cephx key %s had other caps; caps set to %v", entity, r.Caps)
			key, err = r.Ceph.GetKey(ctx, conn, entity)
		}
	}
	if err != nil {
		return err
	}
	if creating || adopting {
		s.next.KeyOwned = true
	}
	if adopting {
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonKeyAdopted, "Adopt", "cephx key %s existed; adopted as the policy allows (adoptExistingKeys): it is re-capped and removed with this Deployment", entity)
	}
	secret := keyringSecret(d, id, key, r.Caps)
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

// keyringFile is the keyring the mgr reads, in Rook's format.
func keyringFile(id, key string, caps []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[mgr.%s]\n\tkey = %s\n", id, key)
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

func keyringSecret(d *appsv1.Deployment, id, key string, caps []string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: contract.KeyringSecretName(id), Namespace: d.Namespace, Labels: ownedLabels(id, d.Namespace)},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{contract.KeyringKey: keyringFile(id, key, caps)},
	}
}

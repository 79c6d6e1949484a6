// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// dashboardPassword reads the namespace's dashboard password, creating the
// Secret with a random one first. The Secret belongs to the cluster (the
// namespace), not to one mgr, so it outlives any single mgr Deployment. A
// Secret without a password is someone else's to fix: the controller never
// overwrites it, and says which key is missing.
func (r *Reconciler) dashboardPassword(ctx context.Context, d *appsv1.Deployment) ([]byte, error) {
	key := client.ObjectKey{Namespace: d.Namespace, Name: contract.DashboardPasswordSecretName}
	read := func() ([]byte, error) {
		s := &corev1.Secret{}
		if err := r.APIReader.Get(ctx, key, s); err != nil {
			return nil, err
		}
		if len(s.Data[contract.DashboardPasswordKey]) == 0 {
			return nil, fmt.Errorf("%w: Secret %s exists without key %q; add the dashboard admin's password under %q, or delete the Secret so that the controller generates one",
				errDashboardPassword, key.Name, contract.DashboardPasswordKey, contract.DashboardPasswordKey)
		}
		return s.Data[contract.DashboardPasswordKey], nil
	}
	password, err := read()
	if !apierrors.IsNotFound(err) {
		return password, err
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	password = []byte(base64.RawURLEncoding.EncodeToString(raw))
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: map[string]string{contract.LabelApp: contract.AppName, contract.LabelRookCluster: d.Namespace}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{contract.DashboardPasswordKey: password},
	}
	apiWrites.Inc()
	err = r.Client.Create(ctx, s)
	if apierrors.IsAlreadyExists(err) {
		return read() // another writer won: use theirs, once
	}
	if err != nil {
		return nil, err
	}
	return password, nil
}

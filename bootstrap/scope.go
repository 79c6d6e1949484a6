// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// scope is everything one reconcile of one mgr knows: the controller, the
// Deployment as read from the cache, its mgr id, and the connection to the
// namespace's Ceph cluster, read lazily (only when a ceph call is due) and at
// most once.
type scope struct {
	r  *Reconciler
	d  *appsv1.Deployment
	id string
	// c and cerr are the connection, or why there is none, once conn ran.
	c    *ceph.Conn
	cerr error
}

// conn reads the namespace's mon_host and admin keyring, once per reconcile
// and only when a ceph call is needed.
func (b *scope) conn(ctx context.Context) (ceph.Conn, error) {
	if b.c != nil || b.cerr != nil {
		return derefConn(b.c), b.cerr
	}
	c, err := b.r.clusterConn(ctx, b.d.Namespace)
	if err != nil {
		b.cerr = err
		return ceph.Conn{}, err
	}
	b.c = &c
	return c, nil
}

// clusterConn reads namespace ns's mon_host and admin keyring by name,
// uncached (the controller caches no Secret it did not create).
func (r *Reconciler) clusterConn(ctx context.Context, ns string) (ceph.Conn, error) {
	cfg, keyring := &corev1.Secret{}, &corev1.Secret{}
	var missing []string
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: contract.ConfigSecretName}, cfg); err != nil {
		if !apierrors.IsNotFound(err) {
			return ceph.Conn{}, err
		}
		missing = append(missing, "Secret "+contract.ConfigSecretName)
	}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: contract.AdminKeyringSecretName}, keyring); err != nil {
		if !apierrors.IsNotFound(err) {
			return ceph.Conn{}, err
		}
		missing = append(missing, "Secret "+contract.AdminKeyringSecretName)
	}
	if len(missing) == 0 && (len(cfg.Data[contract.ConfigSecretMonHostKey]) == 0 || len(keyring.Data[contract.KeyringKey]) == 0) {
		missing = append(missing, fmt.Sprintf("keys %s/%s and %s/%s", contract.ConfigSecretName, contract.ConfigSecretMonHostKey, contract.AdminKeyringSecretName, contract.KeyringKey))
	}
	if len(missing) > 0 {
		return ceph.Conn{}, fmt.Errorf("%w: namespace %s lacks %v", errClusterMissing, ns, missing)
	}
	return ceph.Conn{Cluster: ns, MonHost: string(cfg.Data[contract.ConfigSecretMonHostKey]), AdminKeyring: keyring.Data[contract.KeyringKey]}, nil
}

func derefConn(c *ceph.Conn) ceph.Conn {
	if c == nil {
		return ceph.Conn{}
	}
	return *c
}

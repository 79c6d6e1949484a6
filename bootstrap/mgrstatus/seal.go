// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mgrstatus

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// The controller trusts only a status it sealed itself: an HMAC over the
// Deployment's UID and the status, with a key kept in a Secret of the
// controller's own namespace, which namespace editors of Ceph clusters cannot
// read. A status whose seal does not verify is ignored and overwritten. The
// Store also remembers the last status it wrote per Deployment, so a replay of
// one of its own earlier statuses is ignored as well while it runs.

// KeySecretName holds the key that seals the status (key "key").
const KeySecretName = "mgr-bootstrap-status-key"

const statusKeyKey = "key"

// RBAC: the key Secret in the controller's own namespace only.
//
// +kubebuilder:rbac:groups="",namespace=mgr-webhook-system,resources=secrets,verbs=get,resourceNames=mgr-bootstrap-status-key
// +kubebuilder:rbac:groups="",namespace=mgr-webhook-system,resources=secrets,verbs=create

func sealWith(key []byte, uid types.UID, st Status) string {
	st.Seal = ""
	m := hmac.New(sha256.New, key)
	m.Write([]byte(uid))
	m.Write([]byte{0})
	m.Write([]byte(st.encode()))
	return base64.RawStdEncoding.EncodeToString(m.Sum(nil))
}

func verifyWith(key []byte, uid types.UID, st Status) bool {
	return hmac.Equal([]byte(st.Seal), []byte(sealWith(key, uid, st)))
}

// SealedBy reports whether st, read from Deployment uid, carries the seal
// of the status key in sec (Secret KeySecretName): what a reader
// allowed to get that Secret (mgrctl check) may trust. It cannot tell a
// replay of an earlier sealed status from the last one; only the running
// controller remembers which it wrote last.
func SealedBy(sec *corev1.Secret, uid types.UID, st Status) (bool, error) {
	key, err := statusKeyOf(sec)
	if err != nil {
		return false, err
	}
	return verifyWith(key, uid, st), nil
}

// statusKeyOf is the key a status key Secret holds.
func statusKeyOf(sec *corev1.Secret) ([]byte, error) {
	key := sec.Data[statusKeyKey]
	if len(key) < 32 {
		return nil, fmt.Errorf("secret %s/%s: key %q holds %d bytes, want at least 32; delete the Secret to have a new one made", sec.Namespace, sec.Name, statusKeyKey, len(key))
	}
	return key, nil
}

// keyLoader loads the key from its Secret, creating it on first start, and
// retries until it can (a missing namespace or RBAC is logged, not fatal:
// the controller waits, it never runs on an unsealed memory).
type keyLoader struct {
	client    client.Client
	reader    client.Reader
	namespace string
	store     *Store
	wrote     func()
}

// NeedLeaderElection: only the leader reconciles, and only it needs the key.
func (l *keyLoader) NeedLeaderElection() bool { return true }

func (l *keyLoader) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithValues("secret", l.namespace+"/"+KeySecretName)
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: 100, Cap: 30 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		key, err := l.load(ctx)
		if err != nil {
			log.Error(err, "cannot load the key that seals the bootstrap status; no mgr is reconciled until it can")
			return false, nil
		}
		l.store.key.Store(&key)
		log.Info("status key loaded")
		return true, nil
	})
	if err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
		return err
	}
	<-ctx.Done()
	return nil
}

func (l *keyLoader) load(ctx context.Context) ([]byte, error) {
	sec := &corev1.Secret{}
	err := l.reader.Get(ctx, client.ObjectKey{Namespace: l.namespace, Name: KeySecretName}, sec)
	if apierrors.IsNotFound(err) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		sec = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: l.namespace, Name: KeySecretName,
				Labels: map[string]string{"app.kubernetes.io/name": contract.ControllerName, "app.kubernetes.io/component": "status-key"}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{statusKeyKey: key},
		}
		l.wrote()
		err = l.client.Create(ctx, sec)
		if apierrors.IsAlreadyExists(err) {
			return l.load(ctx) // another replica made it first
		}
		if err != nil {
			return nil, err
		}
		return key, nil
	}
	if err != nil {
		return nil, err
	}
	return statusKeyOf(sec)
}

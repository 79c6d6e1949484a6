// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"sync/atomic"
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

// The status annotation is where users read a mgr's progress, and it is the
// controller's memory (which modules it enabled, which ports and settings it
// made). Anyone who may edit the Deployment may write it, so the controller
// trusts only a status it sealed itself: an HMAC over the Deployment's UID and
// the status, with a key kept in a Secret of the controller's own namespace,
// which namespace editors of Ceph clusters cannot read. A status whose seal
// does not verify is ignored (an Event says so) and overwritten. The
// controller also remembers the last status it wrote per Deployment, so a
// replay of one of its own earlier statuses is ignored as well while it runs.

// StatusKeySecretName holds the key that seals the status (key "key").
const StatusKeySecretName = "mgr-bootstrap-status-key"

const statusKeyKey = "key"

// RBAC: the key Secret in the controller's own namespace only.
//
// +kubebuilder:rbac:groups="",namespace=mgr-webhook-system,resources=secrets,verbs=get,resourceNames=mgr-bootstrap-status-key
// +kubebuilder:rbac:groups="",namespace=mgr-webhook-system,resources=secrets,verbs=create

// sealer seals and verifies statuses once its key is loaded.
type sealer struct {
	key atomic.Pointer[[]byte]
}

func (s *sealer) ready() bool { return s.key.Load() != nil }

// seal is the status's seal for Deployment uid (st.Seal is not covered).
func (s *sealer) seal(uid types.UID, st Status) string { return sealWith(*s.key.Load(), uid, st) }

func (s *sealer) verify(uid types.UID, st Status) bool { return verifyWith(*s.key.Load(), uid, st) }

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
// of the status key in sec (Secret StatusKeySecretName): what a reader
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

// statusKeyLoader loads the key from its Secret, creating it on first start,
// and retries until it can (a missing namespace or RBAC is logged, not
// fatal: the controller waits, it never runs on an unsealed memory).
type statusKeyLoader struct {
	client    client.Client
	reader    client.Reader
	namespace string
	s         *sealer
}

// NeedLeaderElection: only the leader reconciles, and only it needs the key.
func (l *statusKeyLoader) NeedLeaderElection() bool { return true }

func (l *statusKeyLoader) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithValues("secret", l.namespace+"/"+StatusKeySecretName)
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: 100, Cap: 30 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		key, err := l.load(ctx)
		if err != nil {
			log.Error(err, "cannot load the key that seals the bootstrap status; no mgr is reconciled until it can")
			return false, nil
		}
		l.s.key.Store(&key)
		log.Info("status key loaded")
		return true, nil
	})
	if err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
		return err
	}
	<-ctx.Done()
	return nil
}

func (l *statusKeyLoader) load(ctx context.Context) ([]byte, error) {
	sec := &corev1.Secret{}
	err := l.reader.Get(ctx, client.ObjectKey{Namespace: l.namespace, Name: StatusKeySecretName}, sec)
	if apierrors.IsNotFound(err) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		sec = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: l.namespace, Name: StatusKeySecretName,
				Labels: map[string]string{"app.kubernetes.io/name": contract.ControllerName, "app.kubernetes.io/component": "status-key"}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{statusKeyKey: key},
		}
		apiWrites.Inc()
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

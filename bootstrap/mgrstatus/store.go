// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mgrstatus

import (
	"context"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// Store reads and writes the statuses of one controller: it seals what it
// writes, trusts only what it sealed, and remembers per Deployment (by UID:
// a Deployment deleted and created again under its name starts over) the
// status it last wrote or verified and the generation of its last write.
type Store struct {
	// Client patches the annotation; Reader reads a Deployment again after
	// a conflict.
	Client client.Client
	Reader client.Reader
	// Wrote counts each API write (the controller's metric); nil counts none.
	Wrote func()

	key      atomic.Pointer[[]byte]
	lastGood sync.Map // types.UID -> Status
	written  sync.Map // types.UID -> int64
}

// Ready reports whether the key is loaded: before, no status is the
// controller's, and none is written.
func (s *Store) Ready() bool { return s.key.Load() != nil }

// SetKey loads the sealing key (the key loader does; tests too).
func (s *Store) SetKey(key []byte) { s.key.Store(&key) }

// KeyLoader is the leader's runnable that loads the key from Secret
// KeySecretName in namespace, creating it on first start.
func (s *Store) KeyLoader(namespace string) manager.Runnable {
	return &keyLoader{client: s.Client, reader: s.Reader, namespace: namespace, store: s, wrote: s.wrote}
}

func (s *Store) wrote() {
	if s.Wrote != nil {
		s.Wrote()
	}
}

func (s *Store) seal(uid types.UID, st Status) string { return sealWith(*s.key.Load(), uid, st) }

// Behind reports the generation of the last status write to d when the
// cached d is older than it: a stale cache, not news (acting on it would
// repeat ceph writes already done).
func (s *Store) Behind(d *appsv1.Deployment) (int64, bool) {
	g, ok := s.written.Load(d.UID)
	if !ok || d.Generation >= g.(int64) {
		return 0, false
	}
	return g.(int64), true
}

// Forget drops what the Store remembers of Deployment uid: it is let go or
// being deleted, and no status is written to it from here on.
func (s *Store) Forget(uid types.UID) {
	s.written.Delete(uid)
	s.lastGood.Delete(uid)
}

// Sealed reports whether st, read from d, is a status the controller wrote:
// its seal verifies and, while the Store remembers one, it is the last it
// wrote. Before the key is loaded nothing is.
func (s *Store) Sealed(d *appsv1.Deployment, st Status) bool {
	if !s.Ready() || !verifyWith(*s.key.Load(), d.UID, st) {
		return false
	}
	last, remembered := s.lastGood.Load(d.UID)
	return !remembered || st.encode() == last.(Status).encode()
}

// Read is Of for the controller: the status it may act on. A status it did
// not seal (garbled, written by someone else, or not the one it last wrote)
// is ignored, and forged says so: the last status the controller wrote while
// running, or none, which makes it redo (idempotently) what a new mgr needs,
// and never disable a module.
func (s *Store) Read(d *appsv1.Deployment) (st Status, forged bool) {
	raw := d.Annotations[contract.AnnotationBootstrapStatus]
	var last Status
	lastV, remembered := s.lastGood.Load(d.UID)
	if remembered {
		last = lastV.(Status)
	}
	if raw == "" {
		if remembered {
			return last, false
		}
		return Status{}, false
	}
	read, err := Of(d)
	switch {
	case err == nil && s.Sealed(d, read):
		s.lastGood.Store(d.UID, read)
		return read, false
	case remembered:
		return last, true
	default:
		return Status{}, true
	}
}

// Save patches the status annotation of d with st, sealed, only when it
// changed.
//
// The API server bumps a Deployment's generation on every annotation change
// (annotations are copied to ReplicaSets), so writing the status moves the
// generation from g to g+1. The patch carries the resourceVersion it was
// computed from, so g+1 is exactly the generation written, and recording it as
// observed keeps the next reconcile at rest instead of chasing its own writes.
func (s *Store) Save(ctx context.Context, d *appsv1.Deployment, st Status) error {
	return s.SaveWith(ctx, d, st, nil)
}

// SaveWith is Save with change made to the Deployment in the same write
// (one optimistic-locked patch): a change whose record is the status, so
// that neither is written without the other. A change always writes.
func (s *Store) SaveWith(ctx context.Context, d *appsv1.Deployment, st Status, change func(*appsv1.Deployment)) error {
	st.Seal = s.seal(d.UID, st)
	if change == nil && d.Annotations[contract.AnnotationBootstrapStatus] == st.encode() {
		return nil
	}
	observed := d.Generation
	cur := d
	// Status writes of the deployment controller move the resourceVersion
	// during a long module step: on a conflict, read again (client-go's
	// retry: 5 tries) rather than redo the step.
	reread := false
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if reread {
			fresh := &appsv1.Deployment{}
			if err := s.Reader.Get(ctx, client.ObjectKeyFromObject(d), fresh); err != nil {
				return err
			}
			cur = fresh
		}
		reread = true
		if cur.Generation != observed {
			return nil // the spec changed while we worked: its own reconcile follows
		}
		write := st
		if write.ObservedGeneration == observed {
			write.ObservedGeneration++
		}
		write.Seal = s.seal(d.UID, write)
		patch := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[contract.AnnotationBootstrapStatus] = write.encode()
		if change != nil {
			change(cur)
		}
		s.wrote()
		if err := s.Client.Patch(ctx, cur, patch); err != nil {
			return err
		}
		s.written.Store(cur.UID, cur.Generation)
		s.lastGood.Store(cur.UID, write)
		return nil
	})
}

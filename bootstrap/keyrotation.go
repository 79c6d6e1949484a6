// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/bootstrap/keyrotation"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// keyRotationPoll is how soon a due rotation that waits looks again.
const keyRotationPoll = 5 * time.Second

// rotateKeys is the reconcile step that rotates the mgr's owned cephx keys
// when the policy makes them due (bootstrap/keyrotation.Plan): in Ceph
// (`ceph auth rotate`), into their keyring Secrets, then the pod template's
// generation annotation and the status in one write, which restarts the
// pod on its new keys (held by the webhook for a standby-first rollout when
// the cluster has a standby). A key not due costs nothing: no ceph call.
func (r *Reconciler) rotateKeys(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	s.next.KeyRotation = ""
	if !s.next.KeyOwned {
		return ctrl.Result{}, false, nil
	}
	p := keyrotation.PolicyOf(r.Policy.Current().CephxKeys, s.d.Namespace)
	rel := r.cephRelease(ctx, s.d.Namespace)
	now := time.Now()
	k := r.keyOf(ctx, s.d, s.next, rel, p)
	if keyrotation.Due(p, k, now) == "" {
		// Nothing brings a mgr back when its keys come of age: it asks.
		if p.RotateAfter > 0 && !k.Since.IsZero() {
			s.again = max(k.Since.Add(p.RotateAfter).Sub(now), time.Second)
		}
		return ctrl.Result{}, false, nil
	}
	c, err := r.rotationCluster(ctx, s, p, rel, now)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	step := keyrotation.Plan(p, k, c, now)
	switch {
	case step.Blocked != "":
		s.next.KeyRotation = "blocked: " + step.Blocked
		if s.prev.KeyRotation != s.next.KeyRotation {
			r.Recorder.Eventf(s.d, nil, corev1.EventTypeWarning, ReasonKeyRotationBlocked, "RotateKey",
				"mgr %s's cephx keys are due (%s) but cannot be rotated: %s", s.id, step.Due, step.Blocked)
		}
		return ctrl.Result{}, false, nil
	case step.Wait != "":
		s.next.KeyRotation = "waiting: " + step.Wait
		s.again = keyRotationPoll
		return ctrl.Result{}, false, nil
	}
	// The template annotation is the rotation's last write, past the
	// webhook and the confinement: tried first as a dry run, so that a
	// write they would refuse rotates no key (and rotates none again on
	// each retry).
	gen := strconv.FormatInt(nextGeneration(s.d, step.Generation), 10)
	probe := s.d.DeepCopy()
	setKeyGeneration(probe, gen)
	if err := r.Client.Patch(ctx, probe, client.MergeFromWithOptions(s.d, client.MergeFromWithOptimisticLock{}), client.DryRunAll); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: time.Second}, true, nil // changed since read: judged afresh
		}
		return ctrl.Result{}, true, fmt.Errorf("the key rotation's write of mgr %s's pod template annotation %s would be refused, so no key was rotated: %w", s.id, contract.AnnotationCephxKeyGeneration, err)
	}
	conn, err := r.conn(ctx, s)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	for _, key := range r.keys(s) {
		if !*key.own {
			continue
		}
		secret, err := r.Ceph.RotateKey(ctx, conn, key.entity, p.KeyType)
		if err != nil {
			return ctrl.Result{}, true, err
		}
		if err := r.writeKeyring(ctx, s, key, secret); err != nil {
			return ctrl.Result{}, true, fmt.Errorf("cephx key %s was rotated in Ceph but its Secret %s was not written (the next reconcile rotates it again): %w", key.entity, key.secret, err)
		}
	}
	// The template's annotation and the status that records it are one
	// write: a rotation recorded is a pod restarted, and the reverse.
	s.next.KeyGeneration, s.next.KeySince = keyrotation.GenerationOf(gen), now.UTC().Format(time.RFC3339)
	s.next.Phase = mgrstatus.PhaseWaitingForPod
	s.change = func(d *appsv1.Deployment) { setKeyGeneration(d, gen) }
	keyType := p.KeyType
	if keyType == "" {
		keyType = "the mons' preferred type"
	}
	r.Recorder.Eventf(s.d, nil, corev1.EventTypeNormal, ReasonKeyRotated, "RotateKey",
		"rotated mgr %s's cephx keys to generation %s (%s), because %s; its pod restarts on them (pod template annotation %s)",
		s.id, gen, keyType, step.Due, contract.AnnotationCephxKeyGeneration)
	return ctrl.Result{}, true, nil
}

// nextGeneration is the generation a rotation to gen writes on d: the
// annotation must change for the pod to restart, so a template that carries
// gen already (a Deployment created from another's manifest) gets the one
// after. Only equality counts: a number an editor wrote there, however
// large, never pushes the generation up (past what the confinement admits).
func nextGeneration(d *appsv1.Deployment, gen int64) int64 {
	if keyrotation.GenerationOf(d.Spec.Template.Annotations[contract.AnnotationCephxKeyGeneration]) == gen {
		return gen + 1
	}
	return gen
}

// setKeyGeneration writes gen into d's pod template annotation.
func setKeyGeneration(d *appsv1.Deployment, gen string) {
	if d.Spec.Template.Annotations == nil {
		d.Spec.Template.Annotations = map[string]string{}
	}
	d.Spec.Template.Annotations[contract.AnnotationCephxKeyGeneration] = gen
}

// keyOf is what the controller knows of mgr d's keys: its sealed status
// (never the pod template's annotation, which the Deployment's editors
// write: raised, it would hold a due rotation off), their age (from the status, else the
// keyring Secret's creation, asked only of a policy with rotateAfter), and
// whether Ceph reports the mgr's key insecure (the cluster's CephRelease,
// read after the key was made).
func (r *Reconciler) keyOf(ctx context.Context, d *appsv1.Deployment, st mgrstatus.Status, rel *v1alpha1.CephRelease, p keyrotation.Policy) keyrotation.Key {
	id := contract.MgrID(d)
	k := keyrotation.Key{ID: id, Owned: st.KeyOwned, Generation: st.KeyGeneration}
	if t, err := time.Parse(time.RFC3339, st.KeySince); err == nil {
		k.Since = t
	} else if p.RotateAfter > 0 {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		if r.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: contract.KeyringSecretName(id)}, m) == nil {
			k.Since = m.CreationTimestamp.Time
		}
	}
	if rel != nil {
		k.Insecure = keyrotation.ReportedInsecure(slices.Contains(rel.Status.InsecureMgrKeys, "mgr."+id), rel.Status.ReadTime.Time, k.Since)
	}
	return k
}

// cephRelease is the cluster's CephRelease (nil when none is read yet).
func (r *Reconciler) cephRelease(ctx context.Context, ns string) *v1alpha1.CephRelease {
	rel := &v1alpha1.CephRelease{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: ns}, rel); err != nil {
		return nil
	}
	return rel
}

// rotationCluster is what a due rotation of s's mgr waits for: a cluster
// whose releases are not read or cannot rotate, a mgr rolling out, the keys
// of the others and, while one of them is due, which mgr is active (one
// ceph read).
func (r *Reconciler) rotationCluster(ctx context.Context, s *scope, p keyrotation.Policy, rel *v1alpha1.CephRelease, now time.Time) (keyrotation.Cluster, error) {
	var c keyrotation.Cluster
	if rel == nil || len(rel.Status.MonReleases) == 0 || len(rel.Status.MgrReleases) == 0 {
		c.Unread = true
		return c, nil
	}
	c.Cannot = cannotRotate(rel.Status)
	if c.Cannot != "" {
		return c, nil
	}
	for i := range s.mgrs {
		m := &s.mgrs[i]
		// A mgr the policy exempts from the webhooks is still the
		// controller's (unless let go): its keys count.
		if contract.MgrID(m) == "" || m.DeletionTimestamp != nil || contract.LeftAlone(m) {
			continue
		}
		g := r.heldOf(m)
		if g.Replicas == 0 {
			continue
		}
		if g.Held || !g.Current {
			c.Rolling = g.ID
			return c, nil
		}
		if m.UID != s.d.UID {
			st, _ := r.status.Read(m)
			c.Others = append(c.Others, r.keyOf(ctx, m, st, rel, p))
		}
	}
	// Which mgr is active matters only while another's keys are due.
	if !slices.ContainsFunc(c.Others, func(o keyrotation.Key) bool { return keyrotation.Due(p, o, now) != "" }) {
		return c, nil
	}
	conn, err := r.conn(ctx, s)
	if err != nil {
		return c, err
	}
	stat, err := r.Ceph.MgrStat(ctx, conn)
	if err != nil {
		return c, err
	}
	c.Active = stat.ActiveName
	return c, nil
}

// cannotRotate says why a cluster whose daemons run these releases cannot
// rotate a key in place, "" when it can: every mon and mgr on
// contract.KeyRotation or later.
func cannotRotate(st v1alpha1.CephReleaseStatus) string {
	var old []string
	for kind, releases := range map[string][]string{"mons": st.MonReleases, "mgrs": st.MgrReleases} {
		for _, v := range releases {
			cv, err := contract.ParseCephTag(v)
			if err != nil || !cv.AtLeast(contract.KeyRotation) {
				old = append(old, kind+" run "+v)
			}
		}
	}
	if len(old) == 0 {
		return ""
	}
	slices.Sort(old)
	return fmt.Sprintf("rotating a key in place (ceph auth rotate) needs every mon and mgr on Ceph %s or later, and the cluster's %s; upgrade them, or set cephxKeys so that no rotation is due",
		contract.KeyRotation, strings.Join(old, ", "))
}

// writeKeyring puts key into k's keyring Secret (the controller's, as
// ensureKey checked): a patch of its data, nothing else.
func (r *Reconciler) writeKeyring(ctx context.Context, s *scope, k cephxKey, key string) error {
	patch, err := json.Marshal(map[string]any{"data": map[string]string{
		contract.KeyringKey: base64.StdEncoding.EncodeToString([]byte(keyringFile(k.entity, key, k.fileCaps))),
	}})
	if err != nil {
		return err
	}
	// Metadata only in and out: the answer's data is not kept.
	sec := &metav1.PartialObjectMetadata{}
	sec.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	sec.Namespace, sec.Name = s.d.Namespace, k.secret
	apiWrites.Inc()
	if err := r.Client.Patch(ctx, sec, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("secret %s is gone", k.secret)
		}
		return err
	}
	return nil
}

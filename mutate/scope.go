// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// LeftAlone reports whether the bootstrap controller lets go of an object:
// labelled LabelManaged=false, or owned by a Rook CephCluster (Rook's
// operator bootstraps those mgrs itself). Letting go only spares the
// object's own editor work; what binds them is the webhooks' Governs, where
// neither the label nor an owner reference exempts by itself.
func LeftAlone(o metav1.Object) bool {
	return o.GetLabels()[contract.LabelManaged] == "false" || RookOwner(o) != nil
}

// RookOwner returns the ceph.rook.io CephCluster owner reference of o, or
// nil. The API server does not check that an owner exists: only a caller
// that finds a live CephCluster of that UID may treat o as Rook's.
func RookOwner(o metav1.Object) *metav1.OwnerReference {
	for _, r := range o.GetOwnerReferences() {
		if r.Kind == contract.CephClusterKind && strings.HasPrefix(r.APIVersion, contract.RookAPIGroup+"/") {
			return &r
		}
	}
	return nil
}

// Governs reports whether the policy binds Deployment namespace/name: a mgr that the
// policy's owner did not exempt and that no live Rook CephCluster owns
// (rookOwned, which the caller verified by the owner's UID).
func (p *Policy) Governs(namespace, name string, isMgr, rookOwned bool) bool {
	return isMgr && !rookOwned && !p.Exempts(namespace, name)
}

// Managed reports whether this project completes, validates and bootstraps
// d, as the controller sees it.
func Managed(d *appsv1.Deployment) bool { return IsMgr(d) && !LeftAlone(d) }

// systemAnnotations are written by controllers, not users: a change to them
// alone carries no new intent (our status, the deployment controller's revision).
var systemAnnotations = map[string]bool{contract.AnnotationBootstrapStatus: true, contract.AnnotationDeploymentRevision: true}

// IntentUnchanged reports whether an update leaves the spec and every label
// and user annotation as they were: status, finalizer, owner-reference and
// controller-annotation writes. Such an update can introduce no violation.
func IntentUnchanged(old, d *appsv1.Deployment) bool {
	return mapsEqual(old.Labels, d.Labels, nil) && mapsEqual(old.Annotations, d.Annotations, systemAnnotations) && SpecUnchanged(old, d)
}

// SpecUnchanged reports whether an update leaves the spec as it was.
func SpecUnchanged(old, d *appsv1.Deployment) bool {
	return equality.Semantic.DeepEqual(old.Spec, d.Spec)
}

func mapsEqual(a, b map[string]string, ignore map[string]bool) bool {
	n := 0
	for k, v := range a {
		if ignore[k] {
			continue
		}
		if w, ok := b[k]; !ok || w != v {
			return false
		}
		n++
	}
	for k := range b {
		if !ignore[k] {
			n--
		}
	}
	return n == 0
}

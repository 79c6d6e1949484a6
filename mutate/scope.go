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

// LeftAlone reports whether an object is someone else's to manage: opted out
// with LabelManaged=false, or owned by a Rook CephCluster (Rook's operator
// completes and runs those mgrs itself). The webhook configurations decide
// the same at the API server; this is the handlers' and controller's copy.
func LeftAlone(o metav1.Object) bool {
	if o.GetLabels()[contract.LabelManaged] == "false" {
		return true
	}
	for _, r := range o.GetOwnerReferences() {
		if r.Kind == contract.CephClusterKind && strings.HasPrefix(r.APIVersion, contract.RookAPIGroup+"/") {
			return true
		}
	}
	return false
}

// Managed reports whether this project completes, validates and bootstraps d.
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

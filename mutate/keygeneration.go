// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	appsv1 "k8s.io/api/apps/v1"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// KeepKeyGeneration keeps the cephx key generation of a mgr's pod template
// (contract.AnnotationCephxKeyGeneration, which the controller raises when
// it rotates the mgr's keys) across an update that leaves it out: a writer
// who replaces the Deployment with its own manifest (kubectl replace, a
// GitOps tool) would otherwise restart the mgr's pod on the keys it runs
// already, twice (the annotation dropped, then written back). A value the
// writer sets is the writer's: it restarts the pod, and the controller,
// which reads the generation from its sealed status, rotates nothing for
// it. It reports the section it changed.
func KeepKeyGeneration(old, d *appsv1.Deployment) Section {
	if old == nil {
		return 0
	}
	v, ok := old.Spec.Template.Annotations[contract.AnnotationCephxKeyGeneration]
	if !ok {
		return 0
	}
	if _, set := d.Spec.Template.Annotations[contract.AnnotationCephxKeyGeneration]; set {
		return 0
	}
	if d.Spec.Template.Annotations == nil {
		d.Spec.Template.Annotations = map[string]string{}
	}
	d.Spec.Template.Annotations[contract.AnnotationCephxKeyGeneration] = v
	return SectionTemplateMetadata
}

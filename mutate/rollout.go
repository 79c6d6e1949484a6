// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// HoldRollout decides whether a write of mgr Deployment d (old is the
// stored object; nil for a create or a mgr newly governed) holds its
// rollout, so that the controller rolls the cluster's mgrs standby first
// with one failover (docs/rollouts.md): spec.paused and annotation
// contract.AnnotationRolloutHold. It reports the sections it changed.
//
//   - A change of the pod template of a mgr whose cluster has a standby is
//     held. The cluster's facts are the controller's (nil: no controller
//     reads the cluster, so none would release a hold, and none is put).
//   - A held mgr stays held while its template stays and it stays paused;
//     whoever resumes it (`kubectl rollout resume`) ends the hold.
//   - A mgr its writer pauses is the writer's: it is not held, and the
//     controller never resumes it.
//   - Only the webhook holds: a hold annotation the write brings that this
//     rule does not give is removed, so nothing an editor writes makes the
//     controller fail a mgr over.
func HoldRollout(old, d *appsv1.Deployment, facts *UpgradeFacts) Section {
	oldHeld := old != nil && old.Spec.Paused && old.Annotations[contract.AnnotationRolloutHold] == contract.RolloutHoldStandbysFirst
	canHold := facts != nil && facts.Standbys > 0
	// Comparing the templates is most of the cost (a reflective walk of
	// the pod template on every update): done only when a hold could
	// follow from it.
	changed := old != nil && (oldHeld || canHold) && templateChanged(&old.Spec.Template, &d.Spec.Template)
	var hold bool
	switch {
	case changed:
		// Paused by its writer, unless by this rule: the API server may
		// call the webhook again on its own output (reinvocation).
		writerPaused := d.Spec.Paused && !oldHeld && d.Annotations[contract.AnnotationRolloutHold] != contract.RolloutHoldStandbysFirst
		hold = canHold && !writerPaused
	default:
		hold = oldHeld && d.Spec.Paused
	}
	var sections Section
	if hold {
		if !d.Spec.Paused {
			d.Spec.Paused = true
			sections |= SectionPaused
		}
		if d.Annotations[contract.AnnotationRolloutHold] != contract.RolloutHoldStandbysFirst {
			if d.Annotations == nil {
				d.Annotations = map[string]string{}
			}
			d.Annotations[contract.AnnotationRolloutHold] = contract.RolloutHoldStandbysFirst
			sections |= SectionAnnotations
		}
		return sections
	}
	if _, ok := d.Annotations[contract.AnnotationRolloutHold]; ok {
		delete(d.Annotations, contract.AnnotationRolloutHold)
		sections |= SectionAnnotations
	}
	if oldHeld && changed && d.Spec.Paused {
		// Held by us, and no longer to be (the cluster lost its standby,
		// or its controller): we paused it, we resume it.
		d.Spec.Paused = false
		sections |= SectionPaused
	}
	return sections
}

// templateChanged reports whether the pod templates differ, as the API
// machinery's semantic equality judges: reflect.DeepEqual first, a quarter
// of its cost, since templates equal field for field are equal; the
// semantic walk only for those that are not (a quantity written two ways).
func templateChanged(a, b *corev1.PodTemplateSpec) bool {
	return !reflect.DeepEqual(a, b) && !equality.Semantic.DeepEqual(a, b)
}

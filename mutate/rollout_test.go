// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rook-mgr/mgr-webhook/contract"
)

func TestHoldRollout(t *testing.T) {
	withStandby := &UpgradeFacts{Standbys: 1}
	noStandby := &UpgradeFacts{Standbys: 0}
	held := func(d *appsv1.Deployment) {
		d.Spec.Paused = true
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[contract.AnnotationRolloutHold] = contract.RolloutHoldStandbysFirst
	}
	newTemplate := func(d *appsv1.Deployment) {
		d.Spec.Template.Annotations = map[string]string{contract.AnnotationRestartedAt: "2026-12-07T12:00:00Z"}
	}
	for _, tc := range []struct {
		name     string
		old, new func(d *appsv1.Deployment) // nil old: a create
		facts    *UpgradeFacts
		held     bool // paused with the hold annotation after
		paused   bool
		sections Section
	}{
		{name: "a create is never held", new: newTemplate, facts: withStandby},
		{name: "a template change with a standby is held", old: func(*appsv1.Deployment) {}, new: newTemplate, facts: withStandby,
			held: true, paused: true, sections: SectionPaused | SectionAnnotations},
		{name: "an image change is a template change", old: func(*appsv1.Deployment) {}, facts: withStandby,
			new:  func(d *appsv1.Deployment) { mgrContainer(d).Image = "quay.io/ceph/ceph:v19.2.2" },
			held: true, paused: true, sections: SectionPaused | SectionAnnotations},
		{name: "a quantity written another way is no change", facts: withStandby,
			old: func(d *appsv1.Deployment) {
				mgrContainer(d).Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
			},
			new: func(d *appsv1.Deployment) {
				mgrContainer(d).Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1024Mi")}
			}},
		{name: "no standby: nothing to fail over to, not held", old: func(*appsv1.Deployment) {}, new: newTemplate, facts: noStandby},
		{name: "no controller reads the cluster: not held", old: func(*appsv1.Deployment) {}, new: newTemplate},
		{name: "no template change: not held", old: func(*appsv1.Deployment) {},
			new: func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 5 }, facts: withStandby},
		{name: "a replica change is not a template change", old: func(*appsv1.Deployment) {},
			new: func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32) }, facts: withStandby},
		{name: "a hold stays while the template stays and it stays paused", old: held, new: func(d *appsv1.Deployment) {
			d.Spec.MinReadySeconds = 5
		}, facts: withStandby, held: true, paused: true},
		{name: "a hold the writer dropped comes back while paused", old: held, new: func(d *appsv1.Deployment) {
			delete(d.Annotations, contract.AnnotationRolloutHold)
		}, facts: withStandby, held: true, paused: true, sections: SectionAnnotations},
		{name: "resumed (kubectl rollout resume, or the controller's release): the hold ends", old: held, new: func(d *appsv1.Deployment) {
			d.Spec.Paused = false
		}, facts: withStandby, sections: SectionAnnotations},
		{name: "a new template on a held mgr stays held", old: held, new: newTemplate, facts: withStandby, held: true, paused: true},
		{name: "a held mgr whose cluster lost its standby is resumed by whoever paused it", old: held, new: newTemplate, facts: noStandby,
			sections: SectionPaused | SectionAnnotations},
		{name: "a mgr its writer pauses is the writer's", old: func(*appsv1.Deployment) {}, new: func(d *appsv1.Deployment) {
			newTemplate(d)
			d.Spec.Paused = true
		}, facts: withStandby, paused: true},
		{name: "a mgr its writer paused before is the writer's", old: func(d *appsv1.Deployment) { d.Spec.Paused = true }, new: newTemplate,
			facts: withStandby, paused: true},
		{name: "an editor's hold annotation is removed", old: func(*appsv1.Deployment) {}, new: func(d *appsv1.Deployment) {
			held(d)
		}, facts: withStandby, paused: true, sections: SectionAnnotations},
		{name: "a template change the webhook held before (reinvocation) stays held", old: func(*appsv1.Deployment) {}, new: func(d *appsv1.Deployment) {
			newTemplate(d)
			held(d)
		}, facts: withStandby, held: true, paused: true},
		{name: "an editor's hold annotation on a create is removed", new: held, facts: withStandby, paused: true, sections: SectionAnnotations},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var old *appsv1.Deployment
			if tc.old != nil {
				old = completedMinimal(t)
				tc.old(old)
			}
			d := completedMinimal(t)
			if old != nil {
				d = old.DeepCopy()
			}
			tc.new(d)
			before := d.DeepCopy()
			sections := HoldRollout(old, d, tc.facts)
			isHeld := d.Annotations[contract.AnnotationRolloutHold] == contract.RolloutHoldStandbysFirst
			if isHeld != tc.held || d.Spec.Paused != tc.paused || sections != tc.sections {
				t.Errorf("held %t, paused %t, sections %b; want held %t, paused %t, sections %b", isHeld, d.Spec.Paused, sections, tc.held, tc.paused, tc.sections)
			}
			if _, ok := d.Annotations[contract.AnnotationRolloutHold]; ok && !isHeld {
				t.Errorf("the hold annotation is left as %q", d.Annotations[contract.AnnotationRolloutHold])
			}
			// Idempotent: the decision on its own output changes nothing.
			again := d.DeepCopy()
			if s := HoldRollout(old, again, tc.facts); s != 0 {
				t.Errorf("a second decision changed sections %b", s)
			}
			before.Spec.Paused, before.Annotations = d.Spec.Paused, d.Annotations
			if !equality.Semantic.DeepEqual(before, d) {
				t.Error("HoldRollout changed more than spec.paused and the hold annotation")
			}
		})
	}
}

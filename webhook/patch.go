// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"bytes"

	json "github.com/goccy/go-json"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/rook-mgr/mgr-webhook/mutate"
)

// sectionPatches maps each section Complete may change to its JSON Patch path
// and value. "add" on an existing member replaces it (RFC 6902), so one op per
// changed section suffices; untouched sections cost nothing. This replaces a
// generic diff of the whole object (jsonpatch.CreatePatch), which costs more
// than the rest of the admission.
var sectionPatches = []struct {
	section mutate.Section
	path    string
	value   func(d *appsv1.Deployment) any
}{
	{mutate.SectionLabels, "/metadata/labels", func(d *appsv1.Deployment) any { return nonNilMap(d.Labels) }},
	{mutate.SectionAnnotations, "/metadata/annotations", func(d *appsv1.Deployment) any { return nonNilMap(d.Annotations) }},
	{mutate.SectionReplicas, "/spec/replicas", func(d *appsv1.Deployment) any { return d.Spec.Replicas }},
	{mutate.SectionSelector, "/spec/selector", func(d *appsv1.Deployment) any { return d.Spec.Selector }},
	{mutate.SectionStrategy, "/spec/strategy", func(d *appsv1.Deployment) any { return d.Spec.Strategy }},
	{mutate.SectionTemplateMetadata, "/spec/template/metadata", func(d *appsv1.Deployment) any { return d.Spec.Template.ObjectMeta }},
	{mutate.SectionContainers, "/spec/template/spec/containers", func(d *appsv1.Deployment) any { return d.Spec.Template.Spec.Containers }},
	{mutate.SectionInitContainers, "/spec/template/spec/initContainers", func(d *appsv1.Deployment) any { return d.Spec.Template.Spec.InitContainers }},
	{mutate.SectionVolumes, "/spec/template/spec/volumes", func(d *appsv1.Deployment) any { return d.Spec.Template.Spec.Volumes }},
	{mutate.SectionServiceAccount, "/spec/template/spec/serviceAccountName", func(d *appsv1.Deployment) any { return d.Spec.Template.Spec.ServiceAccountName }},
	{mutate.SectionAffinity, "/spec/template/spec/affinity", func(d *appsv1.Deployment) any { return d.Spec.Template.Spec.Affinity }},
	{mutate.SectionTolerations, "/spec/template/spec/tolerations", func(d *appsv1.Deployment) any { return d.Spec.Template.Spec.Tolerations }},
	{mutate.SectionPriorityClass, "/spec/template/spec/priorityClassName", func(d *appsv1.Deployment) any { return d.Spec.Template.Spec.PriorityClassName }},
	{mutate.SectionPaused, "/spec/paused", func(d *appsv1.Deployment) any { return d.Spec.Paused }},
}

// patchFor returns the JSON Patch that turns the request object into
// res.Deployment, already encoded: each value is marshalled once, straight
// into the patch (the framework's generic path marshals every op through a
// Marshaler and then re-validates and compacts its output, which cost more
// than the rest of the admission).
func patchFor(res mutate.Result) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(8 << 10)
	b.WriteByte('[')
	first := true
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, sp := range sectionPatches {
		if res.Changed&sp.section == 0 {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(`{"op":"add","path":"`)
		b.WriteString(sp.path) // constant paths: nothing to escape
		b.WriteString(`","value":`)
		if err := enc.Encode(sp.value(res.Deployment)); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// patched is an allowed response carrying an encoded JSON Patch.
func patched(patch []byte) admission.Response {
	pt := admissionv1.PatchTypeJSONPatch
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: true, Patch: patch, PatchType: &pt}}
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

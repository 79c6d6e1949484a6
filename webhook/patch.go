package webhook

import (
	"gomodules.xyz/jsonpatch/v2"
	appsv1 "k8s.io/api/apps/v1"

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
}

// patchFor returns the ops that turn the request object into res.Deployment.
func patchFor(res mutate.Result) []jsonpatch.JsonPatchOperation {
	ops := make([]jsonpatch.JsonPatchOperation, 0, 4)
	for _, sp := range sectionPatches {
		if res.Changed&sp.section != 0 {
			ops = append(ops, jsonpatch.NewOperation("add", sp.path, sp.value(res.Deployment)))
		}
	}
	return ops
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

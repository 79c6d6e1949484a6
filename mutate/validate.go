// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"fmt"
	"path"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rook-mgr/mgr-webhook/contract"
)

var (
	labelsPath   = field.NewPath("metadata", "labels")
	podSpecPath  = field.NewPath("spec", "template", "spec")
	podLabelPath = field.NewPath("spec", "template", "metadata", "labels")
)

// validateIdentity checks the mgr id that everything else is named after.
func validateIdentity(d *appsv1.Deployment) field.ErrorList {
	fp := labelsPath.Key(contract.LabelMgrID)
	id, ok := d.Labels[contract.LabelMgrID]
	if !ok || id == "" {
		return field.ErrorList{field.Required(fp, `set label "mgr" to the mgr id, a short DNS label such as "a"`)}
	}
	if msgs := validation.IsDNS1123Label(id); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(fp, id, "the mgr id must be a DNS label (lower case letters, digits, '-'): "+strings.Join(msgs, "; "))}
	}
	return nil
}

// Validate enforces the policy on a completed mgr Deployment.
func Validate(d *appsv1.Deployment, info ClusterInfo, p *Policy) field.ErrorList {
	return validate(d, info, p, true)
}

// validate judges d; oneErrorPerMistake leaves out the init containers'
// images that repeat the mgr's (whose own check already speaks for them).
// The ratchet compares against every violation of the old object, so it is
// computed without.
func validate(d *appsv1.Deployment, info ClusterInfo, p *Policy, oneErrorPerMistake bool) field.ErrorList {
	errs := validateIdentity(d)
	if len(errs) > 0 {
		return errs
	}
	id := contract.MgrID(d)
	spec := &d.Spec.Template.Spec

	// The name is the mgr id's: two Deployments of one mgr would share its
	// cephx key, keyring Secret and Services, and deleting either would take
	// the key from the other. A fixed name makes the API server refuse the second.
	if want := contract.DeploymentName(id); d.Name != want {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), d.Name,
			fmt.Sprintf("a Deployment of mgr %q must be named %q (Rook's name), so that no two Deployments run one mgr id; rename it, or give it another mgr id", id, want)))
	}

	for _, l := range []string{contract.LabelMgrID, contract.LabelCephDaemonID, contract.LabelInstance} {
		if v, ok := d.Spec.Template.Labels[l]; ok && v != id {
			errs = append(errs, field.Invalid(podLabelPath.Key(l), v, fmt.Sprintf("must equal the mgr id %q from metadata.labels[mgr]", id)))
		}
	}
	if v := d.Spec.Template.Labels[contract.LabelRookCluster]; v != "" && v != info.Namespace {
		errs = append(errs, field.Invalid(podLabelPath.Key(contract.LabelRookCluster), v, fmt.Sprintf("must equal the cluster's namespace %q", info.Namespace)))
	}
	if d.Spec.Selector == nil || d.Spec.Selector.MatchLabels[contract.LabelMgrID] != id {
		var got string
		if d.Spec.Selector != nil {
			got = d.Spec.Selector.MatchLabels[contract.LabelMgrID]
		}
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector", "matchLabels").Key(contract.LabelMgrID), got,
			fmt.Sprintf("the selector must match mgr=%q so that no two mgr Deployments select each other's pods", id)))
	}
	// The opt-out is the policy owner's to grant (Policy.Exemptions): an
	// exempt Deployment is never validated, so here it is always refused.
	if v, ok := d.Labels[contract.LabelManaged]; ok {
		errs = append(errs, field.Forbidden(labelsPath.Key(contract.LabelManaged), fmt.Sprintf(
			"label %s=%s is honoured only on Deployments the policy exempts; remove it, or ask the policy's owner to add {namespace: %s, names: [%s]} to the policy's exemptions",
			contract.LabelManaged, v, info.Namespace, d.Name)))
	}
	if r := d.Spec.Replicas; r != nil && *r > 1 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "replicas"), *r,
			"a mgr Deployment runs at most 1 pod (a mgr id must not run twice); add a standby as another Deployment with its own mgr id"))
	}
	if spec.HostNetwork && !p.AllowHostNetwork {
		errs = append(errs, field.Forbidden(podSpecPath.Child("hostNetwork"), "hostNetwork is not allowed by the policy; remove it (set allowHostNetwork in the policy to permit it)").WithOrigin(string(RuleAllowHostNetwork)))
	}
	errs = append(errs, validateVolumes(spec, id, info, p)...)

	mgrIdx := containerIndex(spec.Containers, contract.MgrContainerName)
	if mgrIdx < 0 {
		errs = append(errs, field.Required(podSpecPath.Child("containers"), `a container named "mgr" running ceph-mgr is required`))
	} else {
		fp := podSpecPath.Child("containers").Index(mgrIdx)
		mgr := &spec.Containers[mgrIdx]
		errs = append(errs, validateImage(fp.Child("image"), mgr.Image, p)...)
		errs = append(errs, validateFlag(fp.Child("args"), mgr.Args, "--id", id, "the mgr id from metadata.labels[mgr]")...)
		errs = append(errs, validateFlag(fp.Child("args"), mgr.Args, "--fsid", info.FSID, fmt.Sprintf("the fsid of the Ceph cluster in namespace %q (ConfigMap %s)", info.Namespace, contract.ConfigMapName))...)
	}
	for i := range spec.InitContainers {
		ic := &spec.InitContainers[i]
		if ic.Name != DashboardInitContainerName && ic.Name != PrometheusInitContainerName {
			continue
		}
		fp := podSpecPath.Child("initContainers").Index(i)
		// Complete gives these the mgr's image: one refused image is one
		// error, on the mgr container, not one per container derived from it.
		if !oneErrorPerMistake || mgrIdx < 0 || ic.Image != spec.Containers[mgrIdx].Image {
			errs = append(errs, validateImage(fp.Child("image"), ic.Image, p)...)
		}
		errs = append(errs, validateFlag(fp.Child("args"), ic.Args, "--fsid", info.FSID, fmt.Sprintf("the fsid of the Ceph cluster in namespace %q", info.Namespace))...)
	}
	if !p.AllowPrivileged {
		for _, list := range []struct {
			name string
			cs   []corev1.Container
		}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
			for i, c := range list.cs {
				if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
					errs = append(errs, field.Forbidden(podSpecPath.Child(list.name).Index(i).Child("securityContext", "privileged"),
						"privileged containers are not allowed by the policy; remove privileged: true (ceph-mgr does not need it)").WithOrigin(string(RuleAllowPrivileged)))
				}
			}
		}
	}
	if mods, ok := contract.ModulesAnnotation(d.Annotations); ok {
		fp := field.NewPath("metadata", "annotations").Key(contract.AnnotationModules)
		if len(p.ModuleChoices) == 0 {
			errs = append(errs, field.Invalid(fp, d.Annotations[contract.AnnotationModules],
				"the policy lets no Deployment choose the mgr modules (they are the whole Ceph cluster's: the policy's modules); remove the annotation, or ask the policy's owner to offer the modules in moduleChoices"))
		} else if len(mods) == 0 {
			errs = append(errs, field.Invalid(fp, d.Annotations[contract.AnnotationModules],
				"names no module; name at least one of the policy's moduleChoices ["+strings.Join(p.ModuleChoices, ", ")+"], or remove the annotation to run the policy's modules"))
		} else {
			outside, _ := contract.ChosenModules(mods, p.ModuleChoices)
			for _, m := range outside {
				errs = append(errs, field.NotSupported(fp, m, p.ModuleChoices))
			}
		}
	}
	for _, name := range requestedSidecars(d.Annotations) {
		if _, ok := p.Sidecars[name]; !ok {
			errs = append(errs, field.NotSupported(field.NewPath("metadata", "annotations").Key(contract.AnnotationInjectSidecars), name, sidecarNames(p)))
		}
	}
	return errs
}

// ValidateUpdate judges an update by what it changes, as Kubernetes
// ratchets CRD validation (KEP-4008): a violation the old object already had,
// on the same field with the same value, is not held against the update, so a
// mgr that a tightened policy no longer admits can still be labelled,
// annotated and released; a violation the update introduces is denied. The
// mgr id (it names the cephx user, keyring and pods) and the fsid never change.
func ValidateUpdate(old, d *appsv1.Deployment, info ClusterInfo, p *Policy) field.ErrorList {
	errs := Validate(d, info, p)
	if len(errs) > 0 {
		errs = ratchet(errs, validate(old, info, p, false))
	}
	if oldID, newID := contract.MgrID(old), contract.MgrID(d); oldID != "" && oldID != newID {
		errs = append(errs, field.Forbidden(labelsPath.Key(contract.LabelMgrID),
			fmt.Sprintf("the mgr id is immutable (was %q); create a new Deployment for mgr %q instead", oldID, newID)))
	}
	oldFSID, newFSID := mgrFlag(old, "--fsid"), mgrFlag(d, "--fsid")
	if oldFSID != "" && oldFSID != newFSID {
		errs = append(errs, field.Forbidden(podSpecPath.Child("containers").Key(contract.MgrContainerName).Child("args"),
			fmt.Sprintf("--fsid is immutable (was %q): a mgr cannot move to another Ceph cluster", oldFSID)))
	}
	return errs
}

// ratchet drops the errors that prior already had.
func ratchet(errs, prior field.ErrorList) field.ErrorList {
	had := make(map[string]bool, len(prior))
	for _, e := range prior {
		had[errorKey(e)] = true
	}
	out := errs[:0]
	for _, e := range errs {
		if !had[errorKey(e)] {
			out = append(out, e)
		}
	}
	return out
}

func errorKey(e *field.Error) string {
	return fmt.Sprintf("%s\x00%s\x00%v", e.Type, e.Field, e.BadValue)
}

// ValidateNotHidden refuses a Deployment whose pod template runs a mgr
// (label app=rook-ceph-mgr) while its own labels do not say so, unless old,
// the object before an update, was such a Deployment with the same spec
// (validation ratchets: labels and annotations stay writable, and deletion
// is never blocked).
func ValidateNotHidden(old, d *appsv1.Deployment) field.ErrorList {
	if !contract.HidesMgr(d) || d.DeletionTimestamp != nil || (old != nil && contract.HidesMgr(old) && contract.SpecUnchanged(old, d)) {
		return nil
	}
	return field.ErrorList{field.Required(labelsPath.Key(contract.LabelApp), fmt.Sprintf(
		"the pod template runs a mgr (spec.template.metadata.labels[%s]=%s): label the Deployment %s=%s as well, so that it is completed and judged by the policy, or remove the label from the template",
		contract.LabelApp, contract.AppName, contract.LabelApp, contract.AppName))}
}

// ValidateStaysMgr refuses an update that takes a governed mgr out of the
// mgr set (label app removed or changed): the webhooks and the controller
// select mgrs by it, so the Deployment, still running ceph-mgr with its
// key, would leave the policy and hold the controller's finalizer forever.
func ValidateStaysMgr(old, d *appsv1.Deployment) field.ErrorList {
	if !contract.IsMgr(old) || contract.IsMgr(d) || d.DeletionTimestamp != nil {
		return nil
	}
	return field.ErrorList{field.Forbidden(labelsPath.Key(contract.LabelApp), fmt.Sprintf(
		"label app=%s cannot be removed or changed: the Deployment would leave the policy while it runs mgr %q; delete the Deployment instead (its cephx key is removed), or ask the policy's owner to exempt it",
		contract.AppName, contract.MgrID(old)))}
}

// ValidateRookWriter refuses a write that gives a mgr Deployment a
// CephCluster owner, creates one with it, or changes the pods one with it
// runs, unless Rook's operator (p.RookOperator()) or system:masters writes
// it: the policy leaves such a Deployment to Rook, so it must hold Rook's
// pods, not an editor's. The owner's liveness does not matter here, and
// nothing else an editor writes on it (labels, annotations, replicas, a
// rollout restart) is refused. old is nil for a create.
func ValidateRookWriter(old, d *appsv1.Deployment, p *Policy, user string, groups []string) field.ErrorList {
	ref := contract.RookOwner(d)
	if ref == nil || !contract.RunsMgr(d) || d.DeletionTimestamp != nil ||
		user == p.RookOperator() || slices.Contains(groups, SystemMasters) {
		return nil
	}
	if old != nil && contract.RookOwner(old) != nil && contract.RunsMgr(old) && contract.SamePods(old, d) {
		return nil
	}
	i := slices.IndexFunc(d.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == ref.UID && r.Name == ref.Name })
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "ownerReferences").Index(i), fmt.Sprintf(
		"only Rook's operator (%s) creates a mgr Deployment that CephCluster %q owns or changes the pods it runs; remove this owner reference, and the policy completes and judges the Deployment as any other mgr",
		p.RookOperator(), ref.Name))}
}

// SystemMasters is the group of the cluster's superusers: no admission
// decision binds them more than RBAC does.
const SystemMasters = "system:masters"

// mgrFlag returns the value of --flag in the mgr container's args.
func mgrFlag(d *appsv1.Deployment, flag string) string {
	cs := d.Spec.Template.Spec.Containers
	if i := containerIndex(cs, contract.MgrContainerName); i >= 0 {
		for _, a := range cs[i].Args {
			if v, ok := strings.CutPrefix(a, flag+"="); ok {
				return v
			}
		}
	}
	return ""
}

func validateFlag(fp *field.Path, args []string, flag, want, what string) field.ErrorList {
	for i, a := range args {
		if flagKey(a) != flag {
			continue
		}
		if v, _ := strings.CutPrefix(a, flag+"="); v != want {
			return field.ErrorList{field.Invalid(fp.Index(i), a, fmt.Sprintf("%s must be %q, %s; remove the arg to have it set", flag, want, what))}
		}
		return nil
	}
	return field.ErrorList{field.Required(fp, fmt.Sprintf("%s=%s is required", flag, want))}
}

func validateImage(fp *field.Path, s string, p *Policy) field.ErrorList {
	img, err := parseImage(s)
	if err != nil {
		return field.ErrorList{field.Invalid(fp, s, "not a valid image reference: "+err.Error())}
	}
	if !slices.Contains(p.Images.AllowedRepositories, img.Repository) {
		// The whole reference is the bad value: a grandfathered foreign
		// image cannot move to another tag or digest of its repository.
		return field.ErrorList{field.NotSupported(fp, s, p.Images.AllowedRepositories).WithOrigin(string(RuleAllowedRepositories))}
	}
	switch {
	case img.Tag == "latest":
		if !p.Images.AllowLatest {
			return field.ErrorList{field.Invalid(fp, s, `the "latest" tag is not allowed: its Ceph release cannot be checked; pin a release tag such as v19.2.3`).WithOrigin(string(RuleAllowLatest))}
		}
		return nil
	case img.Tag == "":
		return field.ErrorList{field.Invalid(fp, s, "the image needs a tag naming its Ceph release (e.g. :v19.2.3, optionally with @digest)").WithOrigin(string(RuleMinimumCephVersion))}
	}
	v, err := contract.ParseCephTag(img.Tag)
	if err != nil {
		return field.ErrorList{field.Invalid(fp, s, "cannot read the Ceph release from the tag: "+err.Error()).WithOrigin(string(RuleMinimumCephVersion))}
	}
	minimum, _ := contract.ParseCephTag(p.Images.MinimumCephVersion) // checked when the policy was parsed
	if !v.AtLeast(minimum) {
		msg := fmt.Sprintf("Ceph %s is older than the policy's minimum %s; use a newer release", v, minimum)
		if !v.AtLeast(contract.OldestMaintained) {
			// Say why the default refuses it, and the way out for a site
			// that must keep an end-of-life release a while.
			msg += fmt.Sprintf(" (Ceph maintains %s and later; a site that must still run an older one lowers images.minimumCephVersion in its policy)", contract.OldestMaintained)
		}
		return field.ErrorList{field.Invalid(fp, s, msg).WithOrigin(string(RuleMinimumCephVersion))}
	}
	return nil
}

func validateVolumes(spec *corev1.PodSpec, id string, info ClusterInfo, p *Policy) field.ErrorList {
	var errs field.ErrorList
	logDir := LogHostPath(p.DataDirHostPath, info.Namespace)
	for i, v := range spec.Volumes {
		fp := podSpecPath.Child("volumes").Index(i)
		if v.HostPath != nil {
			clean := path.Clean(v.HostPath.Path)
			if clean != logDir && !strings.HasPrefix(clean, logDir+"/") {
				// The path is the bad value: the ratchet grandfathers this
				// path, not any path of this volume.
				errs = append(errs, field.Invalid(fp.Child("hostPath", "path"), v.HostPath.Path,
					fmt.Sprintf("hostPath %q is outside the cluster's log directory %q; use an emptyDir or a path under it", v.HostPath.Path, logDir)).WithOrigin(string(RuleDataDirHostPath)))
			}
		}
		if v.Name == contract.KeyringSecretName(id) && (v.Secret == nil || v.Secret.SecretName != contract.KeyringSecretName(id)) {
			errs = append(errs, field.Invalid(fp.Child("secret", "secretName"), secretName(v),
				fmt.Sprintf("the keyring volume must use Secret %q, the keyring of mgr %q", contract.KeyringSecretName(id), id)))
		}
	}
	// The keyring mounted into the mgr must be its own.
	if i := containerIndex(spec.Containers, contract.MgrContainerName); i >= 0 {
		for j, m := range spec.Containers[i].VolumeMounts {
			if strings.TrimSuffix(m.MountPath, "/") != strings.TrimSuffix(KeyringMountPath, "/") {
				continue
			}
			if m.Name != contract.KeyringSecretName(id) {
				errs = append(errs, field.Invalid(podSpecPath.Child("containers").Index(i).Child("volumeMounts").Index(j).Child("name"), m.Name,
					fmt.Sprintf("%s must mount volume %q (Secret %q) for mgr %q", KeyringMountPath, contract.KeyringSecretName(id), contract.KeyringSecretName(id), id)))
			}
		}
	}
	return errs
}

func secretName(v corev1.Volume) string {
	if v.Secret == nil {
		return ""
	}
	return v.Secret.SecretName
}

func sidecarNames(p *Policy) []string {
	names := make([]string, 0, len(p.Sidecars))
	for n := range p.Sidecars {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

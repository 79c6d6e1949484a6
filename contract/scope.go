// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package contract

// Which objects are mgrs, which of them the project manages, and what their
// editors chose: the predicates the webhook and the controller share.

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LeftAlone reports whether the bootstrap controller lets go of an object:
// labelled LabelManaged=false, or owned by a Rook CephCluster (Rook's
// operator bootstraps those mgrs itself). Letting go only spares the
// object's own editor work; what binds them is the webhooks' Governs, where
// neither the label nor an owner reference exempts by itself.
func LeftAlone(o metav1.Object) bool {
	return o.GetLabels()[LabelManaged] == "false" || RookOwner(o) != nil
}

// RookOwner returns the ceph.rook.io CephCluster owner reference of o, or
// nil. The API server does not check that an owner exists: only a caller
// that finds a live CephCluster of that UID may treat o as Rook's.
func RookOwner(o metav1.Object) *metav1.OwnerReference {
	for _, r := range o.GetOwnerReferences() {
		if r.Kind == CephClusterKind && strings.HasPrefix(r.APIVersion, RookAPIGroup+"/") {
			return &r
		}
	}
	return nil
}

// Managed reports whether this project completes, validates and bootstraps
// d, as the controller sees it.
func Managed(d *appsv1.Deployment) bool { return IsMgr(d) && !LeftAlone(d) }

// systemAnnotations are written by controllers, not users: a change to them
// alone carries no new intent (our status and completion stamp, the
// deployment controller's revision).
var systemAnnotations = map[string]bool{AnnotationBootstrapStatus: true, AnnotationCompletedBy: true, AnnotationDeploymentRevision: true}

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

// MgrID returns the mgr id from the Deployment's labels.
func MgrID(d *appsv1.Deployment) string { return d.Labels[LabelMgrID] }

// IsMgr reports whether a Deployment is a mgr Deployment this project handles.
func IsMgr(d *appsv1.Deployment) bool { return d.Labels[LabelApp] == AppName }

// RunsMgr reports whether a Deployment runs mgr pods, by its own labels or
// its pod template's.
func RunsMgr(d *appsv1.Deployment) bool {
	return IsMgr(d) || d.Spec.Template.Labels[LabelApp] == AppName
}

// SamePods reports whether an update leaves the pods a Deployment runs as
// they were: its selector and pod template, but for a `kubectl rollout
// restart` stamp (new pods of the same spec).
func SamePods(old, d *appsv1.Deployment) bool {
	if !equality.Semantic.DeepEqual(old.Spec.Selector, d.Spec.Selector) ||
		!equality.Semantic.DeepEqual(old.Spec.Template.Spec, d.Spec.Template.Spec) {
		return false
	}
	o, n := old.Spec.Template.ObjectMeta, d.Spec.Template.ObjectMeta
	o.Annotations, n.Annotations = nil, nil
	return equality.Semantic.DeepEqual(o, n) &&
		mapsEqual(old.Spec.Template.Annotations, d.Spec.Template.Annotations, map[string]bool{AnnotationRestartedAt: true})
}

// HidesMgr reports whether a Deployment runs mgr pods (its pod template
// carries app=rook-ceph-mgr) without saying so on its own labels: a
// Deployment the webhooks and the controller would not select, whose pods
// the cluster's Services and the role watcher would.
func HidesMgr(d *appsv1.Deployment) bool {
	return !IsMgr(d) && d.Spec.Template.Labels[LabelApp] == AppName
}

// ModulesAnnotation returns the modules a Deployment's annotation
// mgr.ceph.rook.io/modules names (comma-separated, blanks dropped), and
// whether it carries the annotation at all ("" names no module).
func ModulesAnnotation(annotations map[string]string) ([]string, bool) {
	v, ok := annotations[AnnotationModules]
	if !ok {
		return nil, false
	}
	return SplitList(v), true
}

// ChosenModules judges the modules a Deployment's annotation names against
// the policy's moduleChoices: the modules are the whole Ceph cluster's, so a
// Deployment's editor may choose among what the policy's owner offers and no
// more. ok when the policy offers choices and the annotation names at least
// one module, every one of them a choice (a blank annotation would choose
// "none of the offered modules", which is no choice among them); outside
// lists the modules that are not.
func ChosenModules(mods, choices []string) (outside []string, ok bool) {
	for _, m := range mods {
		if !slices.Contains(choices, m) {
			outside = append(outside, m)
		}
	}
	return outside, len(choices) > 0 && len(mods) > 0 && len(outside) == 0
}

// WantedModules is the cluster's module set when a Deployment chose chosen
// among the policy's choices: the policy's modules that are not on offer
// stay, whatever the choice (an editor turns on or off only what the
// policy's owner offered), and the chosen ones join them.
func WantedModules(policyModules, choices, chosen []string) []string {
	var want []string
	for _, m := range policyModules {
		if !slices.Contains(choices, m) && !slices.Contains(want, m) {
			want = append(want, m)
		}
	}
	for _, m := range chosen {
		if !slices.Contains(want, m) {
			want = append(want, m)
		}
	}
	return want
}

// SplitList is a comma-separated list's items, trimmed, empty ones dropped:
// the one reading of every list a user writes (the modules annotation, the
// controller's list flags).
func SplitList(s string) []string {
	var items []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}

// ClusterMgrs groups the managed, live mgr Deployments by namespace (the
// cluster), each with its mgr ids.
func ClusterMgrs(ds []appsv1.Deployment) map[string][]string {
	out := map[string][]string{}
	for i := range ds {
		d := &ds[i]
		if !IsMgr(d) || LeftAlone(d) || d.DeletionTimestamp != nil || MgrID(d) == "" {
			continue
		}
		out[d.Namespace] = append(out[d.Namespace], MgrID(d))
	}
	return out
}

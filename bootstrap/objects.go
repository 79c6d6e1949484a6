// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// keyringFile is the keyring the mgr reads, in Rook's format.
func keyringFile(id, key string, caps []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[mgr.%s]\n\tkey = %s\n", id, key)
	for i := 0; i+1 < len(caps); i += 2 {
		fmt.Fprintf(&b, "\tcaps %s = %q\n", caps[i], caps[i+1])
	}
	return b.String()
}

// ownedLabels mark what the controller creates for mgr id; its cache selects
// on app=rook-ceph-mgr, so these objects are all it watches.
func ownedLabels(id, namespace string) map[string]string {
	return map[string]string{contract.LabelApp: contract.AppName, contract.LabelMgrID: id, contract.LabelRookCluster: namespace}
}

func keyringSecret(d *appsv1.Deployment, id, key string, caps []string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: contract.KeyringSecretName(id), Namespace: d.Namespace, Labels: ownedLabels(id, d.Namespace)},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{contract.KeyringKey: keyringFile(id, key, caps)},
	}
}

// containerPort returns the mgr container's port of that name, or def.
func containerPort(d *appsv1.Deployment, name string, def int32) int32 {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != contract.MgrContainerName {
			continue
		}
		for _, p := range c.Ports {
			if p.Name == name {
				return p.ContainerPort
			}
		}
	}
	return def
}

// clusterLabels mark the namespace's shared objects (Services, the PDB).
func clusterLabels(namespace string) map[string]string {
	return map[string]string{contract.LabelApp: contract.AppName, contract.LabelRookCluster: namespace}
}

// desiredServices are the cluster's metrics Service (Rook's
// makeMetricsService) and dashboard Service (configureDashboard), selecting
// the active mgr (label mgr_role=active) and targeting the container ports
// by name, so each mgr is reached on its own ports.
func desiredServices(namespace string) []*corev1.Service {
	selector := clusterLabels(namespace)
	selector[contract.LabelMgrRole] = contract.RoleActive
	svc := func(name, portName string, port int32, target string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: clusterLabels(namespace)},
			Spec: corev1.ServiceSpec{
				Type:     corev1.ServiceTypeClusterIP,
				Selector: selector,
				Ports: []corev1.ServicePort{{Name: portName, Port: port, Protocol: corev1.ProtocolTCP,
					TargetPort: intstr.FromString(target)}},
			},
		}
	}
	return []*corev1.Service{
		svc(contract.MetricsServiceName, contract.PortNameMetrics, contract.PortMetrics, contract.PortNameMetrics),
		svc(contract.DashboardServiceName, "https-dashboard", contract.PortDashboard, contract.PortNameDash),
	}
}

// serviceDrifted reports whether the fields we own differ from want.
func serviceDrifted(have, want *corev1.Service) bool {
	if !maps.Equal(have.Spec.Selector, want.Spec.Selector) || have.Spec.Type != want.Spec.Type || len(have.Spec.Ports) != len(want.Spec.Ports) {
		return true
	}
	for i, w := range want.Spec.Ports {
		h := have.Spec.Ports[i]
		if h.Name != w.Name || h.Port != w.Port || h.Protocol != w.Protocol || h.TargetPort != w.TargetPort {
			return true
		}
	}
	for k, v := range want.Labels {
		if have.Labels[k] != v {
			return true
		}
	}
	return false
}

// clusterModules is the cluster's wanted module set: the annotation the
// namespace's managed mgrs carry (those without it follow it), or defaults
// when none does. Only an annotation within the policy's choices counts
// (contract.ChosenModules): any other is the editor's wish, not the policy's,
// and is ignored as if it were not there (notChosen says so on that
// Deployment). Two different annotations are a conflict, reported and
// not fought over: conflict names them, and nothing is planned until it is gone.
func clusterModules(ds []appsv1.Deployment, namespace string, defaults, choices []string) (want []string, conflict string) {
	sets := map[string][]string{} // the normalized set -> Deployments carrying it
	for i := range ds {
		d := &ds[i]
		mods, ok := contract.ModulesAnnotation(d.Annotations)
		if !ok || d.Namespace != namespace || d.DeletionTimestamp != nil || !contract.IsMgr(d) || contract.LeftAlone(d) {
			continue
		}
		if _, chosen := contract.ChosenModules(mods, choices); !chosen {
			continue
		}
		key := strings.Join(mods, ",")
		sets[key] = append(sets[key], d.Name)
	}
	switch len(sets) {
	case 0:
		return defaults, ""
	case 1:
		for key := range sets {
			if key == "" {
				return nil, ""
			}
			return strings.Split(key, ","), ""
		}
	}
	var parts []string
	for _, key := range slices.Sorted(maps.Keys(sets)) {
		slices.Sort(sets[key])
		parts = append(parts, fmt.Sprintf("%s on %s", strconv.Quote(key), strings.Join(sets[key], ", ")))
	}
	return nil, fmt.Sprintf("the mgrs of namespace %s ask for different modules (annotation %s: %s); the modules are the cluster's: give every mgr the same value, or remove it from all but one",
		namespace, contract.AnnotationModules, strings.Join(parts, "; "))
}

// podReady reports whether any live pod of the list is Ready.
func podReady(pods []corev1.Pod) bool {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true
			}
		}
	}
	return false
}

// notChosen is why d's modules annotation is ignored, "" when it is not:
// an Event for the Deployment's editor, naming the fix.
func notChosen(d *appsv1.Deployment, choices []string) string {
	mods, ok := contract.ModulesAnnotation(d.Annotations)
	if !ok {
		return ""
	}
	outside, chosen := contract.ChosenModules(mods, choices)
	switch {
	case chosen:
		return ""
	case len(choices) == 0:
		return fmt.Sprintf("annotation %s=%q ignored: the policy offers no module choices (moduleChoices), so the cluster runs the policy's modules; remove the annotation, or ask the policy's owner to offer the modules",
			contract.AnnotationModules, d.Annotations[contract.AnnotationModules])
	default:
		return fmt.Sprintf("annotation %s=%q ignored: %s not among the policy's moduleChoices (%s), so the cluster runs the policy's modules; choose among those, or ask the policy's owner to offer more",
			contract.AnnotationModules, d.Annotations[contract.AnnotationModules], strings.Join(outside, ", "), strings.Join(choices, ", "))
	}
}

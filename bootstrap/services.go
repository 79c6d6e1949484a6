// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// ensureServices keeps the cluster's two Services as Rook has them, one each
// per namespace, in front of the active mgr. Every mgr Deployment of the
// namespace is an owner (none the controller), so the garbage collector
// deletes them with the last mgr, not with whichever created them. Fields the
// controller does not set (user labels, annotations, a clusterIP) are kept; a
// Service edited or deleted is repaired (the Service watch brings us back).
// The per-mgr Services of earlier versions, controlled by d, are removed. A
// Service of these names that another object controls is not touched.
func (r *Reconciler) ensureServices(ctx context.Context, s *scope) error {
	d, id := s.d, s.id
	created := 0
	for _, want := range desiredServices(d.Namespace) {
		have := &corev1.Service{}
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), have)
		if apierrors.IsNotFound(err) {
			if err := controllerutil.SetOwnerReference(d, want, r.Client.Scheme()); err != nil {
				return err
			}
			apiWrites.Inc()
			if err = r.Client.Create(ctx, want); err == nil {
				created++
				continue
			}
			if !apierrors.IsAlreadyExists(err) {
				return err
			}
			// There, yet not in the cache: another mgr of the namespace made
			// it a moment ago (the cache has not caught up), or it lacks our
			// labels (the cache holds only labelled objects) and is someone
			// else's. The API server tells which.
			if err = r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), have); err == nil && have.Labels[contract.LabelApp] != contract.AppName {
				return fmt.Errorf("%w: Service %s exists without label %s=%s; the controller neither adopts nor changes it: delete it, or label it to hand it over",
					errNotOwned, want.Name, contract.LabelApp, contract.AppName)
			}
		}
		switch {
		case err != nil:
			return err
		case metav1.GetControllerOf(have) != nil:
			// Controlled by another object (Rook's operator makes Services of
			// these names): neither adopted nor changed, and no reason to
			// hold the mgr's bootstrap back.
			r.Recorder.Eventf(d, have, corev1.EventTypeWarning, ReasonNotOwned, "Adopt", "%v", notOwned(d, "Service", have))
			continue
		default:
			// A strategic merge adds our owner reference by uid: the namespace's mgrs
			// add theirs at once without conflicts (and without a lost update).
			patch := client.StrategicMergeFrom(have.DeepCopy())
			owned := isOwner(have, d)
			drifted := serviceDrifted(have, want)
			if owned && !drifted {
				continue
			}
			if !owned {
				if err := controllerutil.SetOwnerReference(d, have, r.Client.Scheme()); err != nil {
					return err
				}
			}
			if drifted {
				have.Spec.Selector, have.Spec.Type, have.Spec.Ports = want.Spec.Selector, want.Spec.Type, want.Spec.Ports
				for k, v := range want.Labels {
					metav1.SetMetaDataLabel(&have.ObjectMeta, k, v)
				}
			}
			apiWrites.Inc()
			if err := r.Client.Patch(ctx, have, patch); err != nil {
				return err
			}
			if drifted {
				r.Recorder.Eventf(d, have, corev1.EventTypeNormal, ReasonServiceRepaired, "Repair", "Service %s restored to its desired spec", have.Name)
			}
		}
	}
	if created > 0 {
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonServicesReady, "Create", "Services %s (metrics :%d) and %s (dashboard :%d) of the cluster created, selecting the active mgr",
			contract.MetricsServiceName, contract.PortMetrics, contract.DashboardServiceName, contract.PortDashboard)
	}
	return r.removeLegacyServices(ctx, d, id)
}

// removeLegacyServices deletes the per-mgr Services that earlier versions
// created for mgr id, when d controls them (nothing else is touched).
func (r *Reconciler) removeLegacyServices(ctx context.Context, d *appsv1.Deployment, id string) error {
	for _, name := range []string{contract.LegacyMetricsServiceName(id), contract.LegacyDashboardServiceName(id)} {
		svc := &corev1.Service{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: name}, svc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if !metav1.IsControlledBy(svc, d) {
			continue
		}
		apiWrites.Inc()
		if err := r.Client.Delete(ctx, svc, client.Preconditions{UID: &svc.UID}); client.IgnoreNotFound(err) != nil {
			return err
		}
		r.Recorder.Eventf(d, svc, corev1.EventTypeNormal, ReasonServicesMigrated, "Migrate",
			"per-mgr Service %s of an earlier version removed: the cluster's Services %s and %s follow the active mgr", name, contract.MetricsServiceName, contract.DashboardServiceName)
	}
	return nil
}

// isOwner reports whether d is among o's owners.
func isOwner(o metav1.Object, d *appsv1.Deployment) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == d.UID {
			return true
		}
	}
	return false
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

package bootstrap

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// ensureServices creates the metrics and dashboard Services, and repairs them
// when edited or deleted (the Owns watch brings us back).
func (r *Reconciler) ensureServices(ctx context.Context, d *appsv1.Deployment, id string) error {
	created := 0
	for _, want := range desiredServices(d, id) {
		have := &corev1.Service{}
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), have)
		switch {
		case apierrors.IsNotFound(err):
			if err := controllerutil.SetControllerReference(d, want, r.Client.Scheme()); err != nil {
				return err
			}
			apiWrites.Inc()
			if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			created++
		case err != nil:
			return err
		case !metav1.IsControlledBy(have, d):
			return notOwned(d, "Service", have)
		case serviceDrifted(have, want):
			patch := client.MergeFrom(have.DeepCopy())
			have.Spec.Selector, have.Spec.Type, have.Spec.Ports = want.Spec.Selector, want.Spec.Type, want.Spec.Ports
			for k, v := range want.Labels {
				metav1.SetMetaDataLabel(&have.ObjectMeta, k, v)
			}
			apiWrites.Inc()
			if err := r.Client.Patch(ctx, have, patch); err != nil {
				return err
			}
			r.Recorder.Eventf(d, have, corev1.EventTypeNormal, ReasonServiceRepaired, "Repair", "Service %s restored to its desired spec", have.Name)
		}
	}
	if created > 0 {
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonServicesReady, "Create", "Services %s (metrics :%d) and %s (dashboard :%d) created",
			contract.MetricsServiceName(id), contract.PortMetrics, contract.DashboardServiceName(id), contract.PortDashboard)
	}
	return nil
}

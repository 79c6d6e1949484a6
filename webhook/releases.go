// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

// The release guard reads each cluster's CephRelease, which only the
// bootstrap controller writes.
//
// +kubebuilder:rbac:groups=mgr.ceph.rook.io,resources=cephreleases,verbs=get;list;watch

// StaleRelease is how old a CephRelease may be and still be judged by: the
// controller writes one at least every ten minutes while it reads the
// cluster, so an older one is of a controller that stopped, and the guard
// judges by the images alone (and says so) rather than by old floors.
const StaleRelease = 30 * time.Minute

// newReleaseInformer watches the CephReleases, each cached as its facts.
// It is not part of the cache's readiness: without the API (an older
// install) or the RBAC (a namespaced one) every cluster's facts are unknown,
// which the guard says, and admission goes on.
func newReleaseInformer(cfg *rest.Config) (cache.SharedIndexInformer, func(<-chan struct{}), error) {
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(dc, 0)
	inf := f.ForResource(v1alpha1.GroupVersion.WithResource("cephreleases")).Informer()
	if err := inf.SetTransform(toRelease); err != nil {
		return nil, nil, err
	}
	return inf, f.Start, nil
}

// toRelease reduces a CephRelease to its name and status (idempotent).
func toRelease(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil // already reduced, or cache.DeletedFinalStateUnknown
	}
	r := &v1alpha1.CephRelease{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, r); err != nil {
		return nil, err
	}
	r.ObjectMeta.ManagedFields = nil
	return r, nil
}

// upgradeFacts are the facts of r for the guard; nil when r is missing,
// never read, or stale at now.
func upgradeFacts(r *v1alpha1.CephRelease, now time.Time) *mutate.UpgradeFacts {
	if r == nil || r.Status.ReadTime.IsZero() || now.Sub(r.Status.ReadTime.Time) > StaleRelease {
		return nil
	}
	st := r.Status
	mon, _ := contract.ReleaseMajor(st.MinMonRelease)
	f := &mutate.UpgradeFacts{RequireOSDRelease: st.RequireOSDRelease, MinMonRelease: mon, Health: st.Health, Standbys: int(st.StandbyMgrs)}
	for _, s := range st.MonReleases {
		if v, err := contract.ParseCephTag(s); err == nil {
			f.Mons = append(f.Mons, v)
		}
	}
	return f
}

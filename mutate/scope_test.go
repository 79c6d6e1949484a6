// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rook-mgr/mgr-webhook/contract"
)

func TestValidateStaysMgr(t *testing.T) {
	now := metav1.Now()
	mgr := func(finalizer bool) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": contract.AppName, "mgr": "a"}}}
		if finalizer {
			d.Finalizers = []string{contract.FinalizerCephxKey}
		}
		return d
	}
	for name, tc := range map[string]struct {
		old, d *appsv1.Deployment
		refuse bool
	}{
		"label removed with finalizer": {mgr(true), func() *appsv1.Deployment { d := mgr(true); delete(d.Labels, "app"); return d }(), true},
		"label changed with finalizer": {mgr(true), func() *appsv1.Deployment { d := mgr(true); d.Labels["app"] = "x"; return d }(), true},
		"label and finalizer removed":  {mgr(true), func() *appsv1.Deployment { d := mgr(false); delete(d.Labels, "app"); return d }(), true},
		"no finalizer":                 {mgr(false), func() *appsv1.Deployment { d := mgr(false); delete(d.Labels, "app"); return d }(), true},
		"never a mgr":                  {func() *appsv1.Deployment { d := mgr(false); delete(d.Labels, "app"); return d }(), func() *appsv1.Deployment { d := mgr(false); delete(d.Labels, "app"); return d }(), false},
		"being deleted": {mgr(true), func() *appsv1.Deployment {
			d := mgr(true)
			delete(d.Labels, "app")
			d.DeletionTimestamp = &now
			return d
		}(), false},
		"stays": {mgr(true), mgr(true), false},
	} {
		t.Run(name, func(t *testing.T) {
			errs := ValidateStaysMgr(tc.old, tc.d)
			if (len(errs) > 0) != tc.refuse {
				t.Fatalf("errors %v, refuse %v", errs, tc.refuse)
			}
			if tc.refuse && errs[0].Field != "metadata.labels[app]" {
				t.Errorf("field %s", errs[0].Field)
			}
		})
	}
}

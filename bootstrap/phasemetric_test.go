// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// TestCountPhases: managed mgrs are counted by their status phase, a mgr
// without one as Pending and a garbled one as Error; opted-out mgrs and other
// Deployments are not counted.
func TestCountPhases(t *testing.T) {
	mgr := func(name, status string, labels map[string]string) client.Object {
		l := map[string]string{contract.LabelApp: contract.AppName, contract.LabelMgrID: name}
		maps.Copy(l, labels)
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: contract.DeploymentName(name), Namespace: "rook-ceph", Labels: l}}
		if status != "" {
			d.Annotations = map[string]string{contract.AnnotationBootstrapStatus: status}
		}
		return d
	}
	other := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "rook-ceph", Labels: map[string]string{"app": "web"}}}
	cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(
		mgr("a", `{"phase":"Ready"}`, nil), mgr("b", `{"phase":"Ready"}`, nil), mgr("c", "", nil),
		mgr("d", `{"phase":"CephUnavailable"}`, nil), mgr("e", `{garbled`, nil),
		mgr("f", `{"phase":"Error"}`, map[string]string{contract.LabelManaged: "false"}), other,
	).Build()
	all := func(*appsv1.Deployment, mgrstatus.Status) bool { return true }
	got, err := countPhases(cl, all)
	if err != nil {
		t.Fatal(err)
	}
	want := map[mgrstatus.Phase]int{mgrstatus.PhaseReady: 2, mgrstatus.PhasePending: 1, mgrstatus.PhaseCephUnavailable: 1, mgrstatus.PhaseError: 1}
	if !maps.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}

	// A status the controller did not seal is Pending, whatever it claims.
	notB := func(d *appsv1.Deployment, _ mgrstatus.Status) bool { return d.Name != contract.DeploymentName("b") }
	if got, err = countPhases(cl, notB); err != nil {
		t.Fatal(err)
	}
	want = map[mgrstatus.Phase]int{mgrstatus.PhaseReady: 1, mgrstatus.PhasePending: 2, mgrstatus.PhaseCephUnavailable: 1, mgrstatus.PhaseError: 1}
	if !maps.Equal(got, want) {
		t.Errorf("with b's status unsealed: counts %v, want %v", got, want)
	}
}

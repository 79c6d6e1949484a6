// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rook-mgr/mgr-webhook/contract"
)

func TestDesiredServices(t *testing.T) {
	svcs := desiredServices("rook-ceph")
	want := map[string]struct {
		port       string
		number     int32
		targetPort string
	}{
		"rook-ceph-mgr":           {"http-metrics", 9283, "http-metrics"},
		"rook-ceph-mgr-dashboard": {"https-dashboard", 8443, "dashboard"},
	}
	if len(svcs) != len(want) {
		t.Fatalf("%d Services, want %d", len(svcs), len(want))
	}
	for _, s := range svcs {
		w, ok := want[s.Name]
		if !ok {
			t.Errorf("unexpected Service %s", s.Name)
			continue
		}
		p := s.Spec.Ports
		if len(p) != 1 || p[0].Name != w.port || p[0].Port != w.number || p[0].TargetPort != intstr.FromString(w.targetPort) || p[0].Protocol != corev1.ProtocolTCP {
			t.Errorf("%s ports %+v", s.Name, p)
		}
		if sel := s.Spec.Selector; sel["mgr_role"] != "active" || sel["app"] != contract.AppName || sel["rook_cluster"] != "rook-ceph" || len(sel) != 3 {
			t.Errorf("%s selects %v, want exactly the cluster's active mgr", s.Name, sel)
		}
		if s.Labels["mgr"] != "" || s.Labels[contract.LabelApp] != contract.AppName || s.Labels[contract.LabelRookCluster] != "rook-ceph" {
			t.Errorf("%s labels %v: the cluster's, no mgr id, in the controller's cache", s.Name, s.Labels)
		}
		if s.Spec.Type != corev1.ServiceTypeClusterIP {
			t.Errorf("%s type %s", s.Name, s.Spec.Type)
		}
	}
}

// TestServiceDrifted: only the fields the controller owns count; what users
// add (labels, annotations) and what the API server fills in do not.
func TestServiceDrifted(t *testing.T) {
	want := desiredServices("rook-ceph")[0]
	for name, tc := range map[string]struct {
		edit  func(*corev1.Service)
		drift bool
	}{
		"as desired":                  {func(*corev1.Service) {}, false},
		"a user label and annotation": {func(s *corev1.Service) { s.Labels["team"] = "storage"; s.Annotations = map[string]string{"a": "b"} }, false},
		"cluster IP and node port filled": {func(s *corev1.Service) {
			s.Spec.ClusterIP = "10.0.0.1"
			s.Spec.SessionAffinity = corev1.ServiceAffinityNone
		}, false},
		"selector widened":      {func(s *corev1.Service) { delete(s.Spec.Selector, contract.LabelMgrRole) }, true},
		"port changed":          {func(s *corev1.Service) { s.Spec.Ports[0].Port = 80 }, true},
		"target port by number": {func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(9283) }, true},
		"a port added":          {func(s *corev1.Service) { s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "x", Port: 1}) }, true},
		"type NodePort":         {func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }, true},
		"our label removed":     {func(s *corev1.Service) { delete(s.Labels, contract.LabelApp) }, true},
	} {
		t.Run(name, func(t *testing.T) {
			have := want.DeepCopy()
			tc.edit(have)
			if got := serviceDrifted(have, want); got != tc.drift {
				t.Errorf("serviceDrifted = %v, want %v", got, tc.drift)
			}
		})
	}
}

// TestEnsureServices: the first mgr creates the cluster's two Services,
// owned by it, with one Event; the next run changes nothing and says
// nothing; an earlier version's per-mgr Service is removed when the mgr
// controls it, and one that another object controls stays.
func TestEnsureServices(t *testing.T) {
	ctx := t.Context()
	a := mgr("rook-ceph-mgr-a", "a", "uid-a")
	legacy := func(name string, owner *appsv1.Deployment) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{contract.LabelApp: contract.AppName}}}
		if owner != nil {
			s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: owner.Name, UID: owner.UID, Controller: ptrTo(true)}}
		} else {
			rookControlled(s)
		}
		return s
	}
	cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithObjects(a, legacy(contract.LegacyMetricsServiceName("a"), a), legacy(contract.LegacyDashboardServiceName("a"), nil)).Build()
	rec := events.NewFakeRecorder(8)
	r := &Reconciler{Client: cl, APIReader: cl, Recorder: rec}
	drain := func() (out []string) {
		for len(rec.Events) > 0 {
			out = append(out, <-rec.Events)
		}
		return out
	}
	if err := r.ensureServices(ctx, &scope{d: a, id: "a"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{contract.MetricsServiceName, contract.DashboardServiceName} {
		svc := &corev1.Service{}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: "rook-ceph", Name: name}, svc); err != nil || !isOwner(svc, a) {
			t.Errorf("Service %s: %v, owned by the mgr: %v", name, err, isOwner(svc, a))
		}
	}
	first := drain()
	if len(first) != 2 || !strings.Contains(first[0], ReasonServicesReady) || !strings.Contains(first[1], ReasonServicesMigrated) {
		t.Errorf("events of the first run %q, want %s then %s", first, ReasonServicesReady, ReasonServicesMigrated)
	}
	gone := &corev1.Service{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: "rook-ceph", Name: contract.LegacyMetricsServiceName("a")}, gone); !apierrors.IsNotFound(err) {
		t.Errorf("the mgr's legacy Service stayed: %v", err)
	}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: "rook-ceph", Name: contract.LegacyDashboardServiceName("a")}, gone); err != nil {
		t.Errorf("a legacy-named Service another object controls was removed: %v", err)
	}
	if err := r.ensureServices(ctx, &scope{d: a, id: "a"}); err != nil {
		t.Fatal(err)
	}
	if again := drain(); len(again) != 0 {
		t.Errorf("a second run said %q", again)
	}
}

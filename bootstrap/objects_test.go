// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// The desired state of what the controller creates per mgr: keyring Secret
// and Services, and what it reads from the Deployment (ports, modules).

func TestKeyringSecret(t *testing.T) {
	for name, tc := range map[string]struct {
		caps []string
		want string
	}{
		"rook's caps": {contract.DefaultCaps, "[mgr.a]\n\tkey = AQB==\n\tcaps mon = \"allow profile mgr\"\n\tcaps mds = \"allow *\"\n\tcaps osd = \"allow *\"\n"},
		"seed's caps": {contract.SeedCaps, "[mgr.a]\n\tkey = AQB==\n\tcaps mon = \"allow *\"\n\tcaps mds = \"allow *\"\n\tcaps osd = \"allow *\"\n"},
		"no caps":     {nil, "[mgr.a]\n\tkey = AQB==\n"},
	} {
		t.Run(name, func(t *testing.T) {
			s := keyringSecret(mgr("rook-ceph-mgr-a", "a", "uid-a"), "a", "AQB==", tc.caps)
			if got := s.StringData[contract.KeyringKey]; got != tc.want {
				t.Errorf("keyring:\n%s\nwant:\n%s", got, tc.want)
			}
			if s.Name != "rook-ceph-mgr-a-keyring" || s.Namespace != "rook-ceph" || s.Type != corev1.SecretTypeOpaque {
				t.Errorf("Secret %s/%s type %s", s.Namespace, s.Name, s.Type)
			}
			if s.Labels[contract.LabelApp] != contract.AppName || s.Labels[contract.LabelMgrID] != "a" || s.Labels[contract.LabelRookCluster] != "rook-ceph" {
				t.Errorf("labels %v: the controller's cache selects app=rook-ceph-mgr", s.Labels)
			}
		})
	}
}

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

func TestContainerPorts(t *testing.T) {
	d := mgr("rook-ceph-mgr-a", "a", "uid-a")
	d.Spec.Template.Spec.Containers = []corev1.Container{
		{Name: "log-collector", Ports: []corev1.ContainerPort{{Name: contract.PortNameDash, ContainerPort: 1}}},
		{Name: contract.MgrContainerName, Ports: []corev1.ContainerPort{{Name: contract.PortNameDash, ContainerPort: 18443}}},
	}
	if got := containerPort(d, contract.PortNameDash, contract.PortDashboard); got != 18443 {
		t.Errorf("dashboard port %d, want the mgr container's 18443 (not a sidecar's)", got)
	}
	if got := containerPort(d, contract.PortNameMetrics, contract.PortMetrics); got != contract.PortMetrics {
		t.Errorf("metrics port %d, want the default %d when the container names none", got, contract.PortMetrics)
	}
}

func TestPlanRoles(t *testing.T) {
	pod := func(name, id, role string) corev1.Pod {
		p := corev1.Pod{}
		p.Name, p.Labels = name, map[string]string{contract.LabelApp: contract.AppName, contract.LabelMgrID: id}
		if role != "" {
			p.Labels[contract.LabelMgrRole] = role
		}
		return p
	}
	deleting := pod("a-old", "a", "")
	deleting.DeletionTimestamp = &metav1.Time{}
	for name, tc := range map[string]struct {
		active string
		pods   []corev1.Pod
		want   []roleChange
	}{
		"first labels": {"a", []corev1.Pod{pod("a-1", "a", ""), pod("b-1", "b", "")},
			[]roleChange{{"a-1", "a", "active"}, {"b-1", "b", "standby"}}},
		"failover": {"b", []corev1.Pod{pod("a-1", "a", "active"), pod("b-1", "b", "standby")},
			[]roleChange{{"a-1", "a", "standby"}, {"b-1", "b", "active"}}},
		"at rest: nothing": {"a", []corev1.Pod{pod("a-1", "a", "active"), pod("b-1", "b", "standby")}, nil},
		"a hand-set wrong label is corrected": {"a", []corev1.Pod{pod("a-1", "a", "active"), pod("b-1", "b", "active")},
			[]roleChange{{"b-1", "b", "standby"}}},
		"no active mgr known: labels stay":                   {"", []corev1.Pod{pod("a-1", "a", "active"), pod("b-1", "b", "")}, nil},
		"pods being deleted and pods without an id are left": {"a", []corev1.Pod{deleting, pod("x", "", "")}, nil},
		"an active mgr without a pod here: every pod standby": {"c", []corev1.Pod{pod("a-1", "a", "active")},
			[]roleChange{{"a-1", "a", "standby"}}},
		"a pod of a mgr the controller does not manage (Rook's) is left": {"a", []corev1.Pod{pod("a-1", "a", "active"), pod("r-1", "r", "")}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			if got := planRoles(tc.active, []string{"a", "b", "c"}, tc.pods); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("planRoles(%q) = %v, want %v", tc.active, got, tc.want)
			}
		})
	}
}

func TestDesiredPDB(t *testing.T) {
	want := desiredPDB("rook-ceph")
	if want.Name != "rook-ceph-mgr-pdb" || want.Spec.MaxUnavailable.IntValue() != 1 || want.Spec.MinAvailable != nil ||
		want.Spec.Selector.MatchLabels[contract.LabelApp] != contract.AppName || want.Spec.Selector.MatchLabels[contract.LabelRookCluster] != "rook-ceph" ||
		len(want.Spec.Selector.MatchLabels) != 2 {
		t.Errorf("PDB %s: %+v", want.Name, want.Spec)
	}
	if wantPDB(1) || !wantPDB(2) || wantPDB(0) {
		t.Error("a PDB is wanted for two or more mgrs only")
	}
	for name, tc := range map[string]struct {
		edit  func(*policyv1.PodDisruptionBudget)
		drift bool
	}{
		"as desired":       {func(*policyv1.PodDisruptionBudget) {}, false},
		"a user label":     {func(p *policyv1.PodDisruptionBudget) { p.Labels["team"] = "storage" }, false},
		"maxUnavailable 2": {func(p *policyv1.PodDisruptionBudget) { two := intstr.FromInt32(2); p.Spec.MaxUnavailable = &two }, true},
		"minAvailable instead": {func(p *policyv1.PodDisruptionBudget) {
			p.Spec.MaxUnavailable, p.Spec.MinAvailable = nil, p.Spec.MaxUnavailable
		}, true},
		"selector of one mgr": {func(p *policyv1.PodDisruptionBudget) { p.Spec.Selector.MatchLabels["mgr"] = "a" }, true},
		"a selector expression": {func(p *policyv1.PodDisruptionBudget) {
			p.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Exists"}}
		}, true},
	} {
		t.Run(name, func(t *testing.T) {
			have := want.DeepCopy()
			tc.edit(have)
			if got := pdbDrifted(have, want); got != tc.drift {
				t.Errorf("pdbDrifted = %v, want %v", got, tc.drift)
			}
		})
	}
}

func TestClusterModules(t *testing.T) {
	annotated := func(name, id, modules string) appsv1.Deployment {
		d := *mgr(name, id, types.UID("uid-"+id))
		d.Annotations = map[string]string{contract.AnnotationModules: modules}
		return d
	}
	plain := *mgr("rook-ceph-mgr-c", "c", "uid-c")
	other := annotated("rook-ceph-mgr-x", "x", "influx")
	other.Namespace = "elsewhere"
	defaults := []string{"prometheus", "dashboard"}
	choices := []string{"prometheus", "dashboard", "rook", "influx"}
	for name, tc := range map[string]struct {
		ds       []appsv1.Deployment
		want     []string
		conflict bool
	}{
		"a module the policy does not offer: the annotation is ignored": {[]appsv1.Deployment{annotated("rook-ceph-mgr-a", "a", "prometheus,nfs"), plain}, defaults, false},
		"an ignored annotation is no conflict":                          {[]appsv1.Deployment{annotated("rook-ceph-mgr-a", "a", "nfs"), annotated("rook-ceph-mgr-b", "b", "prometheus")}, []string{"prometheus"}, false},
		"no annotation: the defaults":                                   {[]appsv1.Deployment{plain}, defaults, false},
		"one annotated, the others follow it":                           {[]appsv1.Deployment{annotated("rook-ceph-mgr-a", "a", "prometheus"), plain}, []string{"prometheus"}, false},
		"the same set spelled differently agrees":                       {[]appsv1.Deployment{annotated("rook-ceph-mgr-a", "a", "prometheus, rook"), annotated("rook-ceph-mgr-b", "b", "prometheus,rook")}, []string{"prometheus", "rook"}, false},
		"an empty annotation: no module":                                {[]appsv1.Deployment{annotated("rook-ceph-mgr-a", "a", ""), plain}, nil, false},
		"two different sets: a conflict, nothing planned":               {[]appsv1.Deployment{annotated("rook-ceph-mgr-a", "a", "prometheus"), annotated("rook-ceph-mgr-b", "b", "dashboard")}, nil, true},
		"another namespace's annotation does not count":                 {[]appsv1.Deployment{plain, other}, defaults, false},
	} {
		t.Run(name, func(t *testing.T) {
			got, conflict := clusterModules(tc.ds, "rook-ceph", defaults, choices)
			if !slices.Equal(got, tc.want) || (conflict != "") != tc.conflict {
				t.Errorf("clusterModules = %v, %q; want %v, conflict %v", got, conflict, tc.want, tc.conflict)
			}
			if tc.conflict && (!strings.Contains(conflict, "rook-ceph-mgr-a") || !strings.Contains(conflict, "rook-ceph-mgr-b") || !strings.Contains(conflict, contract.AnnotationModules)) {
				t.Errorf("the conflict does not name both Deployments and the annotation: %s", conflict)
			}
		})
	}
}

// Where the policy offers no module choices, no annotation steers the
// cluster's modules, an empty one (which would turn every module off)
// included, and the Deployment is told why and what to do.
func TestModulesAnnotationWithoutChoices(t *testing.T) {
	defaults := []string{"prometheus", "dashboard"}
	for _, v := range []string{"nfs", "", "prometheus"} {
		d := mgr("rook-ceph-mgr-a", "a", "uid-a")
		d.Annotations = map[string]string{contract.AnnotationModules: v}
		if got, conflict := clusterModules([]appsv1.Deployment{*d}, "rook-ceph", defaults, nil); !slices.Equal(got, defaults) || conflict != "" {
			t.Errorf("annotation %q without choices: modules %v (conflict %q), want the policy's %v", v, got, conflict, defaults)
		}
		if why := notChosen(d, nil); !strings.Contains(why, "moduleChoices") || !strings.Contains(why, "ignored") {
			t.Errorf("annotation %q without choices: %q does not say it is ignored and why", v, why)
		}
	}
	d := mgr("rook-ceph-mgr-a", "a", "uid-a")
	d.Annotations = map[string]string{contract.AnnotationModules: "prometheus, nfs"}
	if why := notChosen(d, []string{"prometheus", "dashboard"}); !strings.Contains(why, "nfs not among") || !strings.Contains(why, "prometheus, dashboard") {
		t.Errorf("a module outside the choices: %q", why)
	}
	d.Annotations[contract.AnnotationModules] = "prometheus"
	if why := notChosen(d, []string{"prometheus"}); why != "" {
		t.Errorf("a chosen module reported: %q", why)
	}
	delete(d.Annotations, contract.AnnotationModules)
	if why := notChosen(d, nil); why != "" {
		t.Errorf("no annotation reported: %q", why)
	}
}

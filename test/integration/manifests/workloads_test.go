// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// TestMgrWorkloadsOnlyFromTheControlPlane: with each shipped install's
// admission policies on a real API server, a namespace editor (built-in
// edit, impersonated) cannot run a mgr the Deployments webhook never sees: a
// bare Pod or a ReplicaSet with the mgr labels (a forged controller owner
// included), a StatefulSet of one, a label edit that makes a Pod a mgr's, or
// any workload that reads a mgr's keyring Secret (volume, projected volume,
// environment) without being that mgr. The control plane's own identities
// still make a mgr's ReplicaSet and Pods, and the controller still labels
// their role.
func TestMgrWorkloadsOnlyFromTheControlPlane(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]func() (string, func(), error){
		"overlays/self-signed": overlay(root, "overlays/self-signed"),
		"chart/cert-manager":   chart("{certificates: {mode: cert-manager}}"),
		"chart/namespaced":     chart("{certificates: {mode: self-signed}, cephNamespaces: [rook-ceph]}"),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			api, _, as := installed(t, dir)
			admin := api.Client
			// Built-in edit's rules (no kube-controller-manager aggregates
			// them into edit here).
			for _, role := range []string{"system:aggregate-to-edit", "system:aggregate-to-view"} {
				if err := admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "jane-" + strings.TrimPrefix(role, "system:")},
					RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
					Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "jane"}}}); err != nil {
					t.Fatal(err)
				}
			}
			jane := as("jane")
			mgrLabels := func() map[string]string { return map[string]string{"app": "rook-ceph-mgr", "mgr": "a"} }
			podSpec := func(edit func(*corev1.PodSpec)) corev1.PodSpec {
				s := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}
				if edit != nil {
					edit(&s)
				}
				return s
			}
			pod := func(name string, labels map[string]string, edit func(*corev1.PodSpec)) *corev1.Pod {
				return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: name, Labels: labels}, Spec: podSpec(edit)}
			}
			keyVolume := func(s *corev1.PodSpec) {
				s.Volumes = []corev1.Volume{{Name: "k", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "rook-ceph-mgr-a-keyring"}}}}
			}
			rs := func(name string, labels map[string]string, owners []metav1.OwnerReference) *appsv1.ReplicaSet {
				return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: name, Labels: labels, OwnerReferences: owners},
					Spec: appsv1.ReplicaSetSpec{Replicas: ptr[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
						Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec(nil)}}}
			}
			rsOwner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rook-ceph-mgr-a-5d8f", UID: "0c0f-rs", Controller: ptr(true)}}
			deployOwner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "rook-ceph-mgr-a", UID: "0c0f-d", Controller: ptr(true)}}
			plain := pod("plain", map[string]string{"app": "web"}, nil)
			// The policies take a moment to be enforced: wait for the first refusal.
			eventuallyRefused(t, "a bare mgr Pod", func() error { return jane.Create(ctx, pod("bare-0", mgrLabels(), nil)) })

			refused := map[string]func() error{
				"create a bare Pod with the mgr labels": func() error { return jane.Create(ctx, pod("bare-1", mgrLabels(), nil)) },
				"create a mgr Pod claiming a ReplicaSet controller": func() error {
					p := pod("forged", mgrLabels(), nil)
					p.OwnerReferences = rsOwner
					return jane.Create(ctx, p)
				},
				"create a ReplicaSet with the mgr labels":             func() error { return jane.Create(ctx, rs("mgr-rs", mgrLabels(), nil)) },
				"create a mgr ReplicaSet claiming a Deployment owner": func() error { return jane.Create(ctx, rs("mgr-rs-2", mgrLabels(), deployOwner)) },
				"create a StatefulSet of a mgr": func() error {
					return jane.Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "mgr-sts"},
						Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: mgrLabels()},
							Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: mgrLabels()}, Spec: podSpec(nil)}}})
				},
				"label a Pod as a mgr's": func() error {
					return patchObj(ctx, jane, plain, func(p *corev1.Pod) { p.Labels = mgrLabels() })
				},
				"mount a mgr's keyring in a Pod": func() error { return jane.Create(ctx, pod("thief-1", map[string]string{"app": "web"}, keyVolume)) },
				"project a mgr's keyring into a Pod": func() error {
					return jane.Create(ctx, pod("thief-2", nil, func(s *corev1.PodSpec) {
						s.Volumes = []corev1.Volume{{Name: "k", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
							{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "rook-ceph-mgr-b-keyring"}}}}}}}}
					}))
				},
				"mount a mgr's server_addr keyring in a Pod": func() error {
					return jane.Create(ctx, pod("thief-5", nil, func(s *corev1.PodSpec) {
						s.Volumes = []corev1.Volume{{Name: "k", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "rook-ceph-server-addr-a-keyring"}}}}
					}))
				},
				"read a mgr's keyring into an init container's environment": func() error {
					return jane.Create(ctx, pod("thief-3", nil, func(s *corev1.PodSpec) {
						s.InitContainers = []corev1.Container{{Name: "i", Image: "registry.k8s.io/pause:3.10", Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{
							SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "rook-ceph-mgr-a-keyring"}, Key: "keyring"}}}}}}
					}))
				},
				"read a mgr's keyring through envFrom": func() error {
					return jane.Create(ctx, pod("thief-4", nil, func(s *corev1.PodSpec) {
						s.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "rook-ceph-mgr-a-keyring"}}}}
					}))
				},
				"mount a mgr's keyring in a Deployment that is no mgr": func() error {
					l := map[string]string{"app": "web"}
					return jane.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "thief"},
						Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: l},
							Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: podSpec(keyVolume)}}})
				},
				"mount a mgr's keyring in a Job": func() error {
					return jane.Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "thief"},
						Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: podSpec(func(s *corev1.PodSpec) {
							keyVolume(s)
							s.RestartPolicy = corev1.RestartPolicyNever
						})}}})
				},
			}
			legacyLabels := map[string]string{"app": "legacy-exporter"}
			legacy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "legacy-exporter"},
				Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: legacyLabels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: legacyLabels}, Spec: podSpec(keyVolume)}}}
			for _, o := range []client.Object{plain, legacy} {
				if err := admin.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
			}
			for name, try := range refused {
				t.Run("an editor may not "+name, func(t *testing.T) { assertRefusedByPolicy(t, try()) })
			}

			controlPlaneRS := rs("rook-ceph-mgr-a-5d8f", mgrLabels(), deployOwner)
			controlPlanePod := pod("rook-ceph-mgr-a-5d8f-x", mgrLabels(), keyVolume)
			controlPlanePod.OwnerReferences = rsOwner
			allowed := []struct {
				name string
				try  func() error
			}{
				{"an editor may create a Pod that is no mgr's", func() error { return jane.Create(ctx, pod("web-1", map[string]string{"app": "web"}, nil)) }},
				// Validation ratchets: a workload admitted before the policy
				// (here by a cluster-admin) may still be scaled.
				{"an editor may scale a Deployment that read a mgr's keyring before", func() error {
					return patchObj(ctx, jane, legacy, func(d *appsv1.Deployment) { d.Spec.Replicas = ptr[int32](0) })
				}},
				{"the deployment controller may create a mgr's ReplicaSet", func() error {
					return as("system:serviceaccount:kube-system:deployment-controller").Create(ctx, controlPlaneRS)
				}},
				{"the replicaset controller may create a mgr's Pod, its keyring mounted", func() error {
					return as("system:serviceaccount:kube-system:replicaset-controller").Create(ctx, controlPlanePod)
				}},
				{"the controller may label the mgr Pod's role", func() error {
					return patchObj(ctx, as(testenv.ServiceAccountUser("mgr-webhook-system", "mgr-bootstrap")), controlPlanePod,
						func(p *corev1.Pod) { p.Labels["mgr_role"] = "active" })
				}},
			}
			for _, a := range allowed {
				t.Run(a.name, func(t *testing.T) {
					if err := a.try(); err != nil {
						t.Errorf("refused: %v", err)
					}
				})
			}
		})
	}
}

// assertRefusedByPolicy: refused by policy mgr-workloads, not by RBAC or
// validation (which would prove nothing about the policy).
func assertRefusedByPolicy(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Error("admitted")
		return
	}
	if !strings.Contains(err.Error(), "mgr-workloads") {
		t.Errorf("refused, but not by ValidatingAdmissionPolicy mgr-workloads: %v", err)
		return
	}
	t.Logf("refused: %v", err)
}

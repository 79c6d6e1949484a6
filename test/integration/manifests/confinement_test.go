// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/test/internal/helmchart"
)

// TestCompromisedComponentsAreConfined installs each overlay's RBAC and
// ValidatingAdmissionPolicies on a real API server, then, impersonating each
// component's ServiceAccount, tries for real the writes a compromised pod
// would use to take over the cluster: every one is refused, while the writes
// the component's job needs still pass (so a refusal is the confinement's, not
// a typo's).
func TestCompromisedComponentsAreConfined(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// Each shipped install: both overlays and the chart in both certificate
	// modes, all namespaced to rook-ceph by default (the victims elsewhere
	// are then out of their RBAC's reach as well), and the chart's opt-in
	// allNamespaces, which only its admission policies confine.
	installs := map[string]struct {
		selfSigned, allNamespaces bool
		dir                       func() (dir string, cleanup func(), err error)
	}{
		"overlays/self-signed":  {true, false, overlay(root, "overlays/self-signed")},
		"overlays/cert-manager": {false, false, overlay(root, "overlays/cert-manager")},
		"chart/self-signed":     {true, false, chart("{certificates: {mode: self-signed}}")},
		"chart/cert-manager":    {false, false, chart("{certificates: {mode: cert-manager}}")},
		"chart/all-namespaces":  {true, true, chart("{certificates: {mode: self-signed}, cephNamespaces: [], allNamespaces: true}")},
	}
	for name, install := range installs {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			api, dir, as := installed(t, install.dir)
			if n, err := testenv.CreateKinds(ctx, api.Client, dir, "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"); err != nil || n != 8 {
				t.Fatalf("admission policies: %d created, %v; want 4 policies (2 confinements, mgr-policy, mgr-workloads) and 4 bindings", n, err)
			}
			admin := api.Client
			v := newVictims(t, admin)
			sa := func(name string) client.Client { return as(testenv.ServiceAccountUser("mgr-webhook-system", name)) }
			bootstrap, webhook := sa("mgr-bootstrap"), sa("mgr-webhook")
			// The policies take a moment to be enforced: wait for the first refusal.
			eventuallyRefused(t, "label a pod that is not a mgr's", func() error {
				return patchObj(ctx, bootstrap, v.webPod, func(p *corev1.Pod) { p.Labels["mgr_role"] = "active" })
			})

			refused := map[string]func() error{
				"change a kube-system pod's image": func() error {
					return patchObj(ctx, bootstrap, v.systemPod, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "evil.example.com/x" })
				},
				"change a mgr pod's image": func() error {
					return patchObj(ctx, bootstrap, v.mgrPod, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "evil.example.com/x" })
				},
				"label a mgr pod other than mgr_role": func() error {
					return patchObj(ctx, bootstrap, v.mgrPod, func(p *corev1.Pod) { p.Labels["app"] = "web" })
				},
				"change a non-mgr Deployment's template": func() error {
					return patchObj(ctx, bootstrap, v.web, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "evil.example.com/x" })
				},
				"change a mgr Deployment's template": func() error {
					return patchObj(ctx, bootstrap, v.mgr, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "evil.example.com/x" })
				},
				// Rollouts: it resumes what the webhook held, nothing more.
				"pause a mgr Deployment": func() error {
					return patchObj(ctx, bootstrap, v.mgr, func(d *appsv1.Deployment) { d.Spec.Paused = true })
				},
				"mark a mgr held": func() error {
					return patchObj(ctx, bootstrap, v.mgr, func(d *appsv1.Deployment) {
						metav1.SetMetaDataAnnotation(&d.ObjectMeta, "mgr.ceph.rook.io/rollout-hold", "standbys-first")
					})
				},
				"resume a mgr its editor paused": func() error {
					return patchObj(ctx, bootstrap, v.handPausedMgr, func(d *appsv1.Deployment) { d.Spec.Paused = false })
				},
				"resume a held mgr and keep the mark": func() error {
					return patchObj(ctx, bootstrap, v.heldMgr, func(d *appsv1.Deployment) { d.Spec.Paused = false })
				},
				"drop the hold's mark and keep the mgr paused": func() error {
					return patchObj(ctx, bootstrap, v.heldMgr, func(d *appsv1.Deployment) { delete(d.Annotations, "mgr.ceph.rook.io/rollout-hold") })
				},
				"resume a held mgr with a new image": func() error {
					return patchObj(ctx, bootstrap, v.heldMgr, func(d *appsv1.Deployment) {
						d.Spec.Paused = false
						delete(d.Annotations, "mgr.ceph.rook.io/rollout-hold")
						d.Spec.Template.Spec.Containers[0].Image = "evil.example.com/x"
					})
				},
				"resume a held mgr and scale it": func() error {
					return patchObj(ctx, bootstrap, v.heldMgr, func(d *appsv1.Deployment) {
						d.Spec.Paused = false
						delete(d.Annotations, "mgr.ceph.rook.io/rollout-hold")
						d.Spec.Replicas = ptr(int32(5))
					})
				},
				"resume a held mgr and change its progress deadline": func() error {
					return patchObj(ctx, bootstrap, v.heldMgr, func(d *appsv1.Deployment) {
						d.Spec.Paused = false
						delete(d.Annotations, "mgr.ceph.rook.io/rollout-hold")
						d.Spec.ProgressDeadlineSeconds = ptr(int32(1))
					})
				},
				// Key rotations: one template annotation raised to a
				// number (the webhook's hold beside it), nothing else.
				"raise a mgr's key generation and change its image": func() error {
					return patchObj(ctx, bootstrap, v.mgr, func(d *appsv1.Deployment) {
						metav1.SetMetaDataAnnotation(&d.Spec.Template.ObjectMeta, "mgr.ceph.rook.io/cephx-key-generation", "2")
						d.Spec.Template.Spec.Containers[0].Image = "evil.example.com/x"
					})
				},
				"raise a mgr's key generation and annotate its pods otherwise": func() error {
					return patchObj(ctx, bootstrap, v.mgr, func(d *appsv1.Deployment) {
						metav1.SetMetaDataAnnotation(&d.Spec.Template.ObjectMeta, "mgr.ceph.rook.io/cephx-key-generation", "2")
						metav1.SetMetaDataAnnotation(&d.Spec.Template.ObjectMeta, "sidecar.istio.io/inject", "true")
					})
				},
				"raise a mgr's key generation and relabel its pods": func() error {
					return patchObj(ctx, bootstrap, v.mgr, func(d *appsv1.Deployment) {
						metav1.SetMetaDataAnnotation(&d.Spec.Template.ObjectMeta, "mgr.ceph.rook.io/cephx-key-generation", "2")
						d.Spec.Template.Labels["evil"] = "x"
					})
				},
				"raise a mgr's key generation and scale it": func() error {
					return patchObj(ctx, bootstrap, v.mgr, func(d *appsv1.Deployment) {
						metav1.SetMetaDataAnnotation(&d.Spec.Template.ObjectMeta, "mgr.ceph.rook.io/cephx-key-generation", "2")
						d.Spec.Replicas = ptr(int32(3))
					})
				},
				"rewrite a mgr's completion stamp alone": func() error {
					return patchObj(ctx, bootstrap, v.mgr, func(d *appsv1.Deployment) {
						metav1.SetMetaDataAnnotation(&d.ObjectMeta, "mgr.ceph.rook.io/completed-by", `{"version":"forged"}`)
					})
				},
				"set a mgr's key generation to a word": func() error {
					return patchObj(ctx, bootstrap, v.mgr, func(d *appsv1.Deployment) {
						metav1.SetMetaDataAnnotation(&d.Spec.Template.ObjectMeta, "mgr.ceph.rook.io/cephx-key-generation", "$(evil)")
					})
				},
				"raise a non-mgr Deployment's key generation": func() error {
					return patchObj(ctx, bootstrap, v.web, func(d *appsv1.Deployment) {
						metav1.SetMetaDataAnnotation(&d.Spec.Template.ObjectMeta, "mgr.ceph.rook.io/cephx-key-generation", "2")
					})
				},
				"mark a mgr held without a key rotation": func() error {
					return patchObj(ctx, bootstrap, v.mgr, func(d *appsv1.Deployment) {
						d.Spec.Paused = true
						metav1.SetMetaDataAnnotation(&d.ObjectMeta, "mgr.ceph.rook.io/rollout-hold", "standbys-first")
					})
				},
				"rewrite a keyring Secret's labels": func() error {
					return patchObj(ctx, bootstrap, v.keyring, func(s *corev1.Secret) { s.Labels["app"] = "web" })
				},
				"rewrite a keyring Secret with another key": func() error {
					return patchObj(ctx, bootstrap, v.keyring, func(s *corev1.Secret) { s.Data["token"] = []byte("x") })
				},
				"rewrite a keyring Secret's owner": func() error {
					return patchObj(ctx, bootstrap, v.keyring, func(s *corev1.Secret) { s.OwnerReferences = nil })
				},
				"rewrite a keyring Secret no mgr controls": func() error {
					return patchObj(ctx, bootstrap, v.strayKeyring, func(s *corev1.Secret) { s.Data["keyring"] = []byte("[mgr.y]\n\tkey = x\n") })
				},
				"rewrite the Ceph cluster's mon Secret": func() error {
					return patchObj(ctx, bootstrap, v.monSecret, func(s *corev1.Secret) { s.Data["fsid"] = []byte("evil") })
				},
				"delete a mgr's keyring Secret": func() error { return bootstrap.Delete(ctx, v.keyring) },
				"another finalizer on a mgr Deployment": func() error {
					return patchObj(ctx, bootstrap, v.mgr, func(d *appsv1.Deployment) { d.Finalizers = append(d.Finalizers, "evil.example.com/hold") })
				},
				"repoint kube-dns": func() error {
					return patchObj(ctx, bootstrap, v.kubeDNS, func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "evil"} })
				},
				"repoint Rook's rook-ceph-mgr Service": func() error {
					return patchObj(ctx, bootstrap, v.rookService, func(s *corev1.Service) { s.Spec.Selector["mgr_role"] = "standby" })
				},
				"delete Rook's rook-ceph-mgr Service": func() error { return bootstrap.Delete(ctx, v.rookService) },
				"write a PDB it does not own": func() error {
					return patchObj(ctx, bootstrap, v.otherPDB, func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = ptr(intstr.FromInt32(0)) })
				},
				"create a PDB of another name": func() error {
					return bootstrap.Create(ctx, pdb("rook-ceph", "block-drains", nil))
				},
				"create a Secret in kube-system": func() error {
					return bootstrap.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "evil"}})
				},
				"create a keyring Secret no mgr controls": func() error {
					return bootstrap.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-mgr-z-keyring",
						Labels: map[string]string{"app": "rook-ceph-mgr"}}})
				},
				"create a server_addr keyring Secret no mgr controls": func() error {
					return bootstrap.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-server-addr-z-keyring",
						Labels: map[string]string{"app": "rook-ceph-mgr"}}})
				},
				"create a service-account-token server_addr keyring Secret a mgr controls": func() error {
					return bootstrap.Create(ctx, saToken("rook-ceph", "rook-ceph-server-addr-b-keyring", "default", []metav1.OwnerReference{mgrOwner(v.mgr, true)}))
				},
				"create its status key in a Ceph namespace": func() error {
					return bootstrap.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "mgr-bootstrap-status-key"}})
				},
				// The API server fills a service-account-token Secret with a
				// long-lived token of the ServiceAccount it names: in
				// kube-system, a controller's; a way to cluster-admin.
				"create a service-account-token Secret named as the dashboard password": func() error {
					return bootstrap.Create(ctx, saToken("kube-system", "rook-ceph-dashboard-password", "clusterrole-aggregation-controller", nil))
				},
				"create a service-account-token Secret in a Ceph namespace": func() error {
					return bootstrap.Create(ctx, saToken("rook-ceph", "rook-ceph-dashboard-password", "default", nil))
				},
				"create a service-account-token keyring Secret a mgr controls": func() error {
					return bootstrap.Create(ctx, saToken("rook-ceph", "rook-ceph-mgr-b-keyring", "default", []metav1.OwnerReference{mgrOwner(v.mgr, true)}))
				},
				"create an Opaque Secret naming a ServiceAccount": func() error {
					s := saToken("rook-ceph", "rook-ceph-dashboard-password", "default", nil)
					s.Type = corev1.SecretTypeOpaque
					return bootstrap.Create(ctx, s)
				},
				"create the dashboard password in kube-system": func() error {
					return bootstrap.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "rook-ceph-dashboard-password",
						Labels: map[string]string{"app": "rook-ceph-mgr"}}})
				},
				"create a keyring Secret in its own namespace": func() error {
					return bootstrap.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mgr-webhook-system", Name: "rook-ceph-mgr-a-keyring",
						Labels: map[string]string{"app": "rook-ceph-mgr"}, OwnerReferences: []metav1.OwnerReference{mgrOwner(v.mgr, true)}}})
				},
				"create a LoadBalancer metrics Service": func() error {
					s := metricsService(v.mgr)
					s.Spec.Type = corev1.ServiceTypeLoadBalancer
					return bootstrap.Create(ctx, s)
				},
				"create a NodePort dashboard Service": func() error {
					s := metricsService(v.mgr)
					s.Name, s.Spec.Ports = "rook-ceph-mgr-dashboard", []corev1.ServicePort{{Name: "dashboard", Port: 8443}}
					s.Spec.Type = corev1.ServiceTypeNodePort
					return bootstrap.Create(ctx, s)
				},
				"create a metrics Service with externalIPs": func() error {
					s := metricsService(v.mgr)
					s.Spec.ExternalIPs = []string{"203.0.113.7"}
					return bootstrap.Create(ctx, s)
				},
				"create a metrics Service on another port": func() error {
					s := metricsService(v.mgr)
					s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "mgr", Port: 6800})
					return bootstrap.Create(ctx, s)
				},
				"create the mgr PDB with maxUnavailable 0": func() error {
					p := pdb("rook-ceph", "rook-ceph-mgr-pdb", []metav1.OwnerReference{mgrOwner(v.mgr, false)})
					p.Spec.MaxUnavailable = ptr(intstr.FromInt32(0))
					return bootstrap.Create(ctx, p)
				},
				"create the mgr PDB with minAvailable": func() error {
					p := pdb("rook-ceph", "rook-ceph-mgr-pdb", []metav1.OwnerReference{mgrOwner(v.mgr, false)})
					p.Spec.MaxUnavailable, p.Spec.MinAvailable = nil, ptr(intstr.FromString("100%"))
					return bootstrap.Create(ctx, p)
				},
				"create a Report of another name": func() error { return bootstrap.Create(ctx, report("rook-ceph", "other-tool", true)) },
				"create its Report without its label": func() error {
					return bootstrap.Create(ctx, report("tenant", "mgr-policy", false))
				},
				"delete another tool's Report":                func() error { return bootstrap.Delete(ctx, v.otherReport) },
				"delete a mgr-policy Report it did not label": func() error { return bootstrap.Delete(ctx, v.unlabelledReport) },
			}
			// No Secret outside the Ceph namespaces: kube-system's tokens,
			// a tenant's, the webhook's CA key. Only the opt-in
			// allNamespaces install binds the controller cluster-wide
			// (docs/security.md says what it can then read).
			reads := map[string]func() error{
				"get a Secret in kube-system": func() error { return bootstrap.Get(ctx, client.ObjectKeyFromObject(v.systemSecret), &corev1.Secret{}) },
				"list the Secrets of kube-system": func() error {
					return bootstrap.List(ctx, &corev1.SecretList{}, client.InNamespace("kube-system"))
				},
				"get a tenant's Secret": func() error { return bootstrap.Get(ctx, client.ObjectKeyFromObject(v.tenantSecret), &corev1.Secret{}) },
				"list a tenant's Secrets": func() error {
					return bootstrap.List(ctx, &corev1.SecretList{}, client.InNamespace("tenant"))
				},
				"list the Secrets of every namespace": func() error { return bootstrap.List(ctx, &corev1.SecretList{}) },
				"get the webhook's CA key": func() error {
					return bootstrap.Get(ctx, client.ObjectKeyFromObject(v.webhookCerts), &corev1.Secret{})
				},
				"list the Secrets of its own namespace": func() error {
					return bootstrap.List(ctx, &corev1.SecretList{}, client.InNamespace("mgr-webhook-system"))
				},
			}
			for name, try := range reads {
				if !install.allNamespaces {
					refused[name] = try
				}
			}
			for name, try := range refused {
				t.Run("mgr-bootstrap may not "+name, func(t *testing.T) { assertRefused(t, try()) })
			}
			allowed := map[string]func() error{
				"label a mgr pod mgr_role=active": func() error {
					return patchObj(ctx, bootstrap, v.mgrPod, func(p *corev1.Pod) { p.Labels["mgr_role"] = "active" })
				},
				"write its finalizer and status on a mgr": func() error {
					return patchObj(ctx, bootstrap, v.mgr, func(d *appsv1.Deployment) {
						d.Finalizers = append(d.Finalizers, "mgr.ceph.rook.io/cephx-key")
						metav1.SetMetaDataAnnotation(&d.ObjectMeta, "mgr.ceph.rook.io/bootstrap-status", `{"phase":"WaitingForPod"}`)
					})
				},
				"raise a mgr's key generation": func() error {
					return patchObj(ctx, bootstrap, v.mgr, func(d *appsv1.Deployment) {
						metav1.SetMetaDataAnnotation(&d.Spec.Template.ObjectMeta, "mgr.ceph.rook.io/cephx-key-generation", "2")
					})
				},
				"raise a mgr's key generation with the webhook's hold and stamp": func() error {
					return patchObj(ctx, bootstrap, v.rotatedMgr, func(d *appsv1.Deployment) {
						metav1.SetMetaDataAnnotation(&d.Spec.Template.ObjectMeta, "mgr.ceph.rook.io/cephx-key-generation", "7")
						d.Spec.Paused = true
						metav1.SetMetaDataAnnotation(&d.ObjectMeta, "mgr.ceph.rook.io/rollout-hold", "standbys-first")
						metav1.SetMetaDataAnnotation(&d.ObjectMeta, "mgr.ceph.rook.io/completed-by", `{"version":"v9","policy":"new"}`)
					})
				},
				"rewrite a mgr's keyring": func() error {
					return patchObj(ctx, bootstrap, v.keyring, func(s *corev1.Secret) { s.Data["keyring"] = []byte("[mgr.k]\n\tkey = new\n") })
				},
				"resume a held mgr, dropping the hold's mark (restamped by the webhook)": func() error {
					return patchObj(ctx, bootstrap, v.heldMgr, func(d *appsv1.Deployment) {
						d.Spec.Paused = false
						delete(d.Annotations, "mgr.ceph.rook.io/rollout-hold")
						metav1.SetMetaDataAnnotation(&d.ObjectMeta, "mgr.ceph.rook.io/completed-by", `{"version":"v9","policy":"new"}`)
					})
				},
				"create the cluster's metrics Service": func() error {
					return bootstrap.Create(ctx, &corev1.Service{
						ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-mgr", Labels: map[string]string{"app": "rook-ceph-mgr", "rook_cluster": "rook-ceph"},
							OwnerReferences: []metav1.OwnerReference{mgrOwner(v.mgr, false)}},
						Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "rook-ceph-mgr", "rook_cluster": "rook-ceph", "mgr_role": "active"},
							Ports: []corev1.ServicePort{{Name: "http-metrics", Port: 9283}}},
					})
				},
				"create the PDB of two mgrs": func() error {
					return bootstrap.Create(ctx, pdb("rook-ceph", "rook-ceph-mgr-pdb", []metav1.OwnerReference{mgrOwner(v.mgr, false)}))
				},
				"create a mgr's keyring Secret": func() error {
					return bootstrap.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-mgr-a-keyring",
						Labels: map[string]string{"app": "rook-ceph-mgr"}, OwnerReferences: []metav1.OwnerReference{mgrOwner(v.mgr, true)}}})
				},
				"create a mgr's server_addr keyring Secret": func() error {
					return bootstrap.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-server-addr-a-keyring",
						Labels: map[string]string{"app": "rook-ceph-mgr"}, OwnerReferences: []metav1.OwnerReference{mgrOwner(v.mgr, true)}}})
				},
				"create its status key in its own namespace": func() error {
					return bootstrap.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mgr-webhook-system", Name: "mgr-bootstrap-status-key"}})
				},
				"create the dashboard password": func() error {
					return bootstrap.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-dashboard-password",
						Labels: map[string]string{"app": "rook-ceph-mgr"}}, Type: corev1.SecretTypeOpaque})
				},
				"create its Report": func() error { return bootstrap.Create(ctx, report("rook-ceph", "mgr-policy", true)) },
				"get a Secret of its Ceph namespace": func() error {
					return bootstrap.Get(ctx, client.ObjectKeyFromObject(v.monSecret), &corev1.Secret{})
				},
				"list the Secrets of its Ceph namespace": func() error {
					return bootstrap.List(ctx, &corev1.SecretList{}, client.InNamespace("rook-ceph"))
				},
			}
			for name, try := range allowed {
				t.Run("mgr-bootstrap may "+name, func(t *testing.T) {
					if err := try(); err != nil {
						t.Errorf("refused: %v", err)
					}
				})
			}

			// The cluster's PDB and Services are owned by every mgr Deployment
			// of the namespace, whatever its name (a duplicate's included).
			t.Run("mgr-bootstrap may add and drop a mgr owner of any name", func(t *testing.T) {
				mine := pdb("rook-ceph", "rook-ceph-mgr-pdb", nil)
				copyOwner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "copy-of-mgr-a", UID: "0c0f-copy", Controller: ptr(false)}
				if err := patchObj(ctx, bootstrap, mine, func(p *policyv1.PodDisruptionBudget) {
					p.OwnerReferences = append(p.OwnerReferences, copyOwner)
				}); err != nil {
					t.Fatalf("adding an owner: %v", err)
				}
				if err := patchObj(ctx, bootstrap, mine, func(p *policyv1.PodDisruptionBudget) {
					p.OwnerReferences = p.OwnerReferences[:1]
				}); err != nil {
					t.Errorf("dropping it again: %v", err)
				}
			})

			// The webhook's own configurations (written by its rotator in
			// self-signed mode; in cert-manager mode RBAC gives it none).
			if _, err := testenv.CreateKinds(ctx, admin, dir, "MutatingWebhookConfiguration"); err != nil {
				t.Fatal(err)
			}
			m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mgr-webhook"}}
			// Each policy is enforced once the API server has compiled it,
			// not all at once: wait for this one's first refusal, with a
			// dry run that changes nothing if it is admitted (in cert-manager
			// mode RBAC refuses the webhook every write already).
			if install.selfSigned {
				eventuallyRefused(t, "a dry run widening the webhook's rules", func() error {
					cur := m.DeepCopy()
					if err := webhook.Get(ctx, client.ObjectKeyFromObject(m), cur); err != nil {
						return err
					}
					cur.Webhooks[0].Rules[0].Resources = []string{"*"}
					return webhook.Update(ctx, cur, client.DryRunAll)
				})
			}
			for name, edit := range map[string]func(*admissionregistrationv1.MutatingWebhookConfiguration){
				"widen its rules to every resource": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
					c.Webhooks[0].Rules[0].Resources = []string{"*"}
				},
				"narrow its objectSelector to nothing": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
					c.Webhooks[0].ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nothing"}}
				},
				"drop its matchConditions": func(c *admissionregistrationv1.MutatingWebhookConfiguration) { c.Webhooks[0].MatchConditions = nil },
				"drop its namespaceSelector": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
					c.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{}
				},
			} {
				t.Run("mgr-webhook may not "+name, func(t *testing.T) { assertRefused(t, updateObj(ctx, webhook, m, edit)) })
			}
			err = updateObj(ctx, webhook, m, func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
				c.Webhooks[0].ClientConfig.CABundle = []byte("-----BEGIN CERTIFICATE-----\n")
			})
			if selfSigned := install.selfSigned; selfSigned && err != nil {
				t.Errorf("self-signed: mgr-webhook may not inject its CA: %v", err)
			} else if !selfSigned && err == nil {
				t.Error("cert-manager: mgr-webhook may write its webhook configuration (cert-manager's cainjector does that)")
			}
		})
	}
}

// installed starts an API server for installs, with namespaces
// mgr-webhook-system and rook-ceph, and applies an install's RBAC and
// admission policies (testenv.ApplyRBAC); everything is removed when t
// ends. It returns the server, the install's kustomization and a client
// that impersonates a user.
func installed(t *testing.T, install func() (string, func(), error)) (*testenv.APIServer, string, func(user string) client.Client) {
	t.Helper()
	api, err := testenv.StartForInstalls("mgr-webhook-system", "rook-ceph")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Stop)
	dir, cleanup, err := install()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	if _, err := testenv.ApplyRBAC(context.Background(), api.Client, dir); err != nil {
		t.Fatal(err)
	}
	as := func(user string) client.Client {
		c, err := client.New(api.ConfigAs(user), client.Options{Scheme: api.Client.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return api, dir, as
}

// overlay is a kustomize overlay of the checkout, as is.
func overlay(root, name string) func() (string, func(), error) {
	return func() (string, func(), error) { return filepath.Join(root, "manifests", name), func() {}, nil }
}

// chart is the chart rendered with values, as a kustomization.
func chart(values string) func() (string, func(), error) {
	return func() (string, func(), error) {
		dir, err := helmchart.ChartInCheckout("mgr-webhook-system", values)
		return dir, func() { os.RemoveAll(dir) }, err
	}
}

// victims are the objects a compromised component would go for.
type victims struct {
	systemPod, webPod, mgrPod *corev1.Pod
	web, mgr                  *appsv1.Deployment
	// heldMgr is paused with the webhook's rollout hold; handPausedMgr is
	// paused by its editor; rotatedMgr has its keys rotated.
	heldMgr, handPausedMgr, rotatedMgr *appsv1.Deployment
	// keyring is a mgr's keyring Secret (controlled by mgr); strayKeyring
	// is named as one and no mgr controls it.
	keyring, strayKeyring *corev1.Secret
	kubeDNS, rookService  *corev1.Service
	otherPDB              *policyv1.PodDisruptionBudget
	// Reports in a namespace of no Ceph cluster: another tool's, and one
	// named as the controller's but not labelled by it.
	otherReport, unlabelledReport *unstructured.Unstructured
	// Secrets: a kube-system token's, a tenant's, the webhook's CA key, and
	// the Ceph cluster's mon Secret the controller needs.
	systemSecret, tenantSecret, webhookCerts, monSecret *corev1.Secret
}

func newVictims(t *testing.T, admin client.Client) victims {
	t.Helper()
	ctx := t.Context()
	for _, ns := range []string{"rook-ceph", "rook-owned", "tenant"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	pod := func(ns, name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	}
	deployment := func(name string, labels map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: name, Labels: labels},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}}}
	}
	rookOwner := []metav1.OwnerReference{{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Name: "rook-owned", UID: "0b7c-rook"}}
	v := victims{
		systemPod:     pod("kube-system", "coredns-0", map[string]string{"k8s-app": "kube-dns"}),
		webPod:        pod("rook-ceph", "web-0", map[string]string{"app": "web"}),
		mgrPod:        pod("rook-ceph", "rook-ceph-mgr-a-0", map[string]string{"app": "rook-ceph-mgr", "mgr": "a"}),
		web:           deployment("web", map[string]string{"app": "web"}),
		mgr:           deployment("rook-ceph-mgr-a", map[string]string{"app": "rook-ceph-mgr", "mgr": "a"}),
		heldMgr:       deployment("rook-ceph-mgr-h", map[string]string{"app": "rook-ceph-mgr", "mgr": "h"}),
		handPausedMgr: deployment("rook-ceph-mgr-p", map[string]string{"app": "rook-ceph-mgr", "mgr": "p"}),
		rotatedMgr:    deployment("rook-ceph-mgr-r", map[string]string{"app": "rook-ceph-mgr", "mgr": "r"}),
		strayKeyring: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-mgr-y-keyring", Labels: map[string]string{"app": "rook-ceph-mgr"}},
			StringData: map[string]string{"keyring": "[mgr.y]\n\tkey = old\n"}},
		kubeDNS: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"k8s-app": "kube-dns"}, Ports: []corev1.ServicePort{{Name: "dns", Port: 53}}}},
		rookService: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-owned", Name: "rook-ceph-mgr", OwnerReferences: rookOwner,
			Labels: map[string]string{"app": "rook-ceph-mgr"}},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "rook-ceph-mgr", "rook_cluster": "rook-owned", "mgr_role": "active"},
				Ports: []corev1.ServicePort{{Name: "http-metrics", Port: 9283}}}},
		otherPDB:         pdb("rook-ceph", "web", nil),
		otherReport:      report("tenant", "other-tool", false),
		unlabelledReport: report("tenant", "mgr-policy", false),
		systemSecret:     &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "bootstrap-token-abcdef"}, StringData: map[string]string{"token-secret": "0123456789abcdef"}},
		tenantSecret:     &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "db-password"}, StringData: map[string]string{"password": "hunter2"}},
		webhookCerts:     &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mgr-webhook-system", Name: "mgr-webhook-certs"}, StringData: map[string]string{"ca.key": "not a real key"}},
		monSecret:        &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-mon"}, StringData: map[string]string{"fsid": "00000000-0000-0000-0000-000000000000"}},
	}
	v.heldMgr.Spec.Paused, v.handPausedMgr.Spec.Paused = true, true
	v.heldMgr.Annotations = map[string]string{"mgr.ceph.rook.io/rollout-hold": "standbys-first"}
	v.rotatedMgr.Spec.Template.Annotations = map[string]string{"mgr.ceph.rook.io/cephx-key-generation": "6", "other": "kept"}
	for _, o := range []client.Object{v.systemPod, v.webPod, v.mgrPod, v.web, v.mgr, v.heldMgr, v.handPausedMgr, v.rotatedMgr, v.kubeDNS, v.rookService, v.otherPDB, v.otherReport, v.unlabelledReport,
		v.systemSecret, v.tenantSecret, v.webhookCerts, v.monSecret, v.strayKeyring} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("%T %s: %v", o, o.GetName(), err)
		}
	}
	v.keyring = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-mgr-k-keyring", Labels: map[string]string{"app": "rook-ceph-mgr"},
		OwnerReferences: []metav1.OwnerReference{mgrOwner(v.mgr, true)}}, StringData: map[string]string{"keyring": "[mgr.k]\n\tkey = old\n"}}
	if err := admin.Create(ctx, v.keyring); err != nil {
		t.Fatal(err)
	}
	return v
}

// saToken is a Secret the API server fills with a token of ServiceAccount sa.
func saToken(ns, name, sa string, owners []metav1.OwnerReference) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners,
		Labels: map[string]string{"app": "rook-ceph-mgr"}, Annotations: map[string]string{corev1.ServiceAccountNameKey: sa}},
		Type: corev1.SecretTypeServiceAccountToken}
}

// metricsService is the cluster's metrics Service as the controller makes it.
func metricsService(owner *appsv1.Deployment) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-mgr", Labels: map[string]string{"app": "rook-ceph-mgr", "rook_cluster": "rook-ceph"},
		OwnerReferences: []metav1.OwnerReference{mgrOwner(owner, false)}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "rook-ceph-mgr", "rook_cluster": "rook-ceph", "mgr_role": "active"},
			Ports: []corev1.ServicePort{{Name: "http-metrics", Port: 9283}}}}
}

// report is an OpenReports Report, labelled as the controller labels its own
// when mine.
func report(ns, name string, mine bool) *unstructured.Unstructured {
	r := &unstructured.Unstructured{}
	r.SetAPIVersion("openreports.io/v1alpha1")
	r.SetKind("Report")
	r.SetNamespace(ns)
	r.SetName(name)
	if mine {
		r.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "mgr-bootstrap"})
	}
	return r
}

func pdb(ns, name string, owners []metav1.OwnerReference) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners,
		Labels: map[string]string{"app": "rook-ceph-mgr", "rook_cluster": ns}},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rook-ceph-mgr", "rook_cluster": ns}}}}
}

func mgrOwner(d *appsv1.Deployment, controller bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: &controller}
}

// patchObj reads o afresh as admin would see it, edits it and patches it as c.
func patchObj[T client.Object](ctx context.Context, c client.Client, o T, edit func(T)) error {
	cur := o.DeepCopyObject().(T)
	if err := c.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
		return err
	}
	before := cur.DeepCopyObject().(T)
	edit(cur)
	return c.Patch(ctx, cur, client.MergeFrom(before))
}

// updateObj reads o afresh, edits it and updates it as c (the rotator's way:
// it may update its webhook configurations, not patch them).
func updateObj[T client.Object](ctx context.Context, c client.Client, o T, edit func(T)) error {
	cur := o.DeepCopyObject().(T)
	if err := c.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
		return err
	}
	edit(cur)
	return c.Update(ctx, cur)
}

func assertRefused(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Error("admitted")
		return
	}
	t.Logf("refused: %v", err)
}

// eventuallyRefused retries try until it is refused by a policy: the API
// server enforces a new policy once its informer has it.
func eventuallyRefused(t *testing.T, what string, try func() error) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		err := try()
		return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"), nil
	})
	if err != nil {
		t.Fatalf("%s: never refused by a ValidatingAdmissionPolicy", what)
	}
}

func ptr[T any](v T) *T { return &v }

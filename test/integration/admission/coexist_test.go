// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

const (
	otherLabel   = "other.example.com/injected"
	otherEnv     = "OTHER_INJECTED"
	otherSidecar = "other-proxy"
)

// otherWebhook is another real mutating webhook on the same Deployments, as a
// service mesh's injector would be: it adds a label, an env var on every
// container and a sidecar, each only when missing.
func otherWebhook(t *testing.T) (url string, calls *atomic.Int64) {
	t.Helper()
	calls = &atomic.Int64{}
	h := &admission.Webhook{Handler: admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		calls.Add(1)
		d := &appsv1.Deployment{}
		if err := json.Unmarshal(req.Object.Raw, d); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if d.Labels == nil {
			d.Labels = map[string]string{}
		}
		d.Labels[otherLabel] = "true"
		spec := &d.Spec.Template.Spec
		if containerIndex(spec.Containers, otherSidecar) < 0 {
			spec.Containers = append(spec.Containers, corev1.Container{Name: otherSidecar, Image: "registry.example.com/proxy:1.0"})
		}
		for _, cs := range []*[]corev1.Container{&spec.Containers, &spec.InitContainers} {
			for i := range *cs {
				c := &(*cs)[i]
				if !hasEnv(c, otherEnv) {
					c.Env = append(c.Env, corev1.EnvVar{Name: otherEnv, Value: "1"})
				}
			}
		}
		mutated, err := json.Marshal(d)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		return admission.PatchResponseFromRaw(req.Object.Raw, mutated)
	})}
	certs := api.Env.WebhookInstallOptions.LocalServingCertDir
	pair, err := tls.LoadX509KeyPair(filepath.Join(certs, "tls.crt"), filepath.Join(certs, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", net.JoinHostPort(api.Env.WebhookInstallOptions.LocalServingHost, "0"), &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l) //nolint:errcheck // closed by the cleanup
	t.Cleanup(func() { srv.Close() })
	return "https://" + l.Addr().String() + "/mutate", calls
}

func containerIndex(cs []corev1.Container, name string) int {
	for i, c := range cs {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func hasEnv(c *corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// TestLivingWithAnotherMutatingWebhook: with another mutating webhook ordered
// before ours and after it, the stored mgr is complete, valid and carries all
// of the other webhook's changes; re-applying the manifest leaves the
// generation unchanged; neither webhook is called more than twice per write.
func TestLivingWithAnotherMutatingWebhook(t *testing.T) {
	url, otherCalls := otherWebhook(t)
	// Mutating webhooks run in the order of their configurations' names; ours
	// is mgr-webhook.
	for i, cfgName := range []string{"aaa-other-before-mgr-webhook", "zzz-other-after-mgr-webhook"} {
		id := fmt.Sprintf("co%d", i)
		t.Run(cfgName, func(t *testing.T) {
			ctx := t.Context()
			cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: cfgName},
				Webhooks: []admissionregistrationv1.MutatingWebhook{{
					Name:                    "inject.other.example.com",
					ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: api.Env.WebhookInstallOptions.LocalServingCAData},
					Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}}}},
					ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rook-ceph-mgr"}},
					NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "ceph-east"}},
					SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone),
					AdmissionReviewVersions: []string{"v1"},
					ReinvocationPolicy:      ptr(admissionregistrationv1.IfNeededReinvocationPolicy),
					FailurePolicy:           ptr(admissionregistrationv1.Fail),
				}},
			}
			if err := k8s.Create(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			defer k8s.Delete(ctx, cfg) //nolint:errcheck // best effort
			// The API server picks a new configuration up asynchronously.
			probe := example(t)
			probe.Namespace, probe.Name, probe.Labels["mgr"] = "ceph-east", contract.DeploymentName("probe"+id), "probe"+id
			if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
				d := probe.DeepCopy()
				if err := k8s.Create(ctx, d, client.DryRunAll); err != nil {
					return false, err
				}
				return d.Labels[otherLabel] == "true", nil
			}); err != nil {
				t.Fatalf("the other webhook never took effect: %v", err)
			}

			manifest := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  namespace: ceph-east
  labels: {app: rook-ceph-mgr, mgr: %s}
spec:
  template:
    spec:
      containers:
        - name: mgr
          image: quay.io/ceph/ceph:v16.2.15
`, contract.DeploymentName(id), id)
			file := filepath.Join(t.TempDir(), "mgr.yaml")
			if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
				t.Fatal(err)
			}
			ours, theirs := webhookCalls(t, "mutate"), otherCalls.Load()
			apply(t, file)
			oursPer, theirsPer := webhookCalls(t, "mutate")-ours, otherCalls.Load()-theirs
			defer deleteDeployment(t, "ceph-east", contract.DeploymentName(id))
			stored := getDeployment(t, "ceph-east", contract.DeploymentName(id))

			if stored.Labels[otherLabel] != "true" {
				t.Errorf("the other webhook's label is gone: %v", stored.Labels)
			}
			spec := stored.Spec.Template.Spec
			if containerIndex(spec.Containers, otherSidecar) < 0 {
				t.Errorf("the other webhook's sidecar is gone")
			}
			for _, c := range append(append([]corev1.Container(nil), spec.Containers...), spec.InitContainers...) {
				if !hasEnv(&c, otherEnv) {
					t.Errorf("container %s lacks the other webhook's %s", c.Name, otherEnv)
				}
			}
			if len(spec.InitContainers) != 2 {
				t.Errorf("not completed: %d init containers", len(spec.InitContainers))
			}
			info, err := clusters.Lookup("ceph-east")
			if err != nil {
				t.Fatal(err)
			}
			if errs := mutate.Validate(stored, info, policy()); len(errs) > 0 {
				t.Errorf("the stored mgr is not valid: %v", errs.ToAggregate())
			}
			if oursPer > 2 || theirsPer > 2 {
				t.Errorf("calls per create: ours %v, theirs %d; want at most 2 each (one reinvocation)", oursPer, theirsPer)
			}

			gen := stored.Generation
			ours, theirs = webhookCalls(t, "mutate"), otherCalls.Load()
			apply(t, file)
			again := getDeployment(t, "ceph-east", contract.DeploymentName(id))
			if again.Generation != gen {
				out, _ := yaml.Marshal(again.Spec)
				t.Errorf("re-applying moved the generation %d -> %d:\n%s", gen, again.Generation, out)
			}
			t.Logf("create: our mutator called %v times, the other %d; re-apply: %v and %d; generation %d -> %d",
				oursPer, theirsPer, webhookCalls(t, "mutate")-ours, otherCalls.Load()-theirs, gen, again.Generation)
		})
	}
}

func apply(t *testing.T, file string) {
	t.Helper()
	out, err := exec.Command(api.Kubectl, "--kubeconfig", api.Kubeconfig, "apply", "-f", file).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply: %v: %s", err, out)
	}
}

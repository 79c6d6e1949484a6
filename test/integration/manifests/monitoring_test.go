// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/promqltest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/test/internal/alertrules"
)

// withComponents builds the README's kustomization that adds the monitoring
// component (the overlays hold the network-policy one), on overlay instead of
// the README's, from the checkout.
func withComponents(t *testing.T, overlay string) (string, objects) {
	t.Helper()
	block, err := testenv.READMEKustomization("kustomize-monitoring")
	if err != nil {
		t.Fatal(err)
	}
	k := strings.ReplaceAll(block, "manifests/overlays/cert-manager", "manifests/"+overlay)
	if !strings.Contains(k, "../manifests/components/monitoring") {
		t.Fatalf("the README's kustomization does not add the monitoring component:\n%s", block)
	}
	dir, err := testenv.KustomizationInCheckout(k)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return buildDir(t, dir)
}

// TestMonitoringComponentsApply: each overlay with the monitoring and
// network-policy components applies with --dry-run=server (the Prometheus
// Operator's CRDs installed), and what they add points at what exists: the
// ServiceMonitors at Services with a metrics port that select the pods, the
// NetworkPolicies at the pods and at ports their containers name.
func TestMonitoringComponentsApply(t *testing.T) {
	api, err := testenv.StartForInstalls("mgr-webhook-system")
	if err != nil {
		t.Fatal(err)
	}
	defer api.Stop()
	for _, overlay := range []string{"overlays/self-signed", "overlays/cert-manager"} {
		t.Run(overlay, func(t *testing.T) {
			path, objs := withComponents(t, overlay)
			out, err := exec.Command(api.Kubectl, "--kubeconfig", api.Kubeconfig, "apply", "--dry-run=server", "-f", path).CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, out)
			}
			if n := strings.Count(string(out), "(server dry run)"); n != len(objs) {
				t.Errorf("%d of %d objects applied:\n%s", n, len(objs), out)
			}
			pods := map[string]corev1.PodTemplateSpec{}
			for _, name := range []string{"mgr-webhook", "mgr-bootstrap"} {
				d := &appsv1.Deployment{}
				objs.get(t, "Deployment/"+name, d)
				pods[name] = d.Spec.Template
			}
			for _, sm := range []struct{ monitor, service string }{{"mgr-webhook", "mgr-webhook"}, {"mgr-bootstrap", "mgr-bootstrap-metrics"}} {
				u := &unstructured.Unstructured{}
				objs.get(t, "ServiceMonitor/"+sm.monitor, &u.Object)
				sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
				svc := &corev1.Service{}
				objs.get(t, "Service/"+sm.service, svc)
				if !subset(sel, svc.Labels) {
					t.Errorf("ServiceMonitor %s selects %v, Service %s is labelled %v", sm.monitor, sel, sm.service, svc.Labels)
				}
				if !subset(svc.Spec.Selector, pods[sm.monitor].Labels) || !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "metrics" }) {
					t.Errorf("Service %s (selector %v, ports %v) does not reach %s's metrics port", sm.service, svc.Spec.Selector, svc.Spec.Ports, sm.monitor)
				}
			}
			for _, name := range []string{"mgr-webhook", "mgr-bootstrap"} {
				np := &networkingv1.NetworkPolicy{}
				objs.get(t, "NetworkPolicy/"+name, np)
				pod := pods[name]
				if !subset(np.Spec.PodSelector.MatchLabels, pod.Labels) {
					t.Errorf("NetworkPolicy %s selects %v, not the pods %v", name, np.Spec.PodSelector.MatchLabels, pod.Labels)
				}
				for _, rule := range np.Spec.Ingress {
					for _, p := range rule.Ports {
						if !slices.ContainsFunc(pod.Spec.Containers[0].Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.Port.StrVal }) {
							t.Errorf("NetworkPolicy %s admits port %v, which %s's container does not name", name, p.Port, name)
						}
					}
				}
			}
		})
	}
}

// indent makes a load block of series lines, however the table indents them.
func indent(series string) string {
	var b strings.Builder
	for _, l := range strings.Split(series, "\n") {
		b.WriteString("  " + strings.TrimSpace(l) + "\n")
	}
	return b.String()
}

func subset(want, have map[string]string) bool {
	if len(want) == 0 {
		return false
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// TestAlertRules evaluates each alert's expression with Prometheus's PromQL
// engine on series that must fire it and series that must not; the `for`
// durations and the severity are checked as values.
func TestAlertRules(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	rules, err := alertrules.Load(root)
	if err != nil {
		t.Fatalf("%s: %v", alertrules.File, err)
	}
	cases := map[string]struct {
		load       string // promqltest load block: series at 1m steps
		fires, not string // the series the alert yields at 90m ("" = none), and a load where it must not fire
	}{
		"MgrWebhookDown": {
			load: `up{job="mgr-webhook", pod="a"} 0x100`, fires: `{} 1`,
			not: `up{job="mgr-webhook", pod="a"} 0x100
			      up{job="mgr-webhook", pod="b"} 1x100`,
		},
		"MgrWebhookErrors": {
			load: `mgr_webhook_admissions_total{webhook="mutate", outcome="errored"} 0+1x100`, fires: `{} 0.016666666666666666`,
			not: `mgr_webhook_admissions_total{webhook="mutate", outcome="errored"} 5x100
			      mgr_webhook_admissions_total{webhook="mutate", outcome="patched"} 0+100x100
			      controller_runtime_webhook_requests_total{code="200"} 0+100x100`,
		},
		"MgrWebhookDenialsSpiking": {
			load: `mgr_webhook_denials_total{webhook="mutate", reason="spec.replicas"} 0x69 0+5x30`, fires: `{} 0.08333333333333333`,
			not: `mgr_webhook_denials_total{webhook="mutate", reason="spec.replicas"} 0+5x100`, // steady, however high
		},
		"MgrWebhookCertificateExpiresSoon": {
			load: `mgr_webhook_serving_certificate_expiry_timestamp_seconds{pod="a"} 86400x100`, fires: `{} 81000`,
			not: `mgr_webhook_serving_certificate_expiry_timestamp_seconds{pod="a"} 864000x100`,
		},
		"CephMgrNotReady": {
			load: `mgr_bootstrap_mgrs{phase="Ready"} 3x100
			       mgr_bootstrap_mgrs{phase="Error"} 1x100`, fires: `{phase="Error"} 1`,
			not: `mgr_bootstrap_mgrs{phase="Ready"} 3x100
			      mgr_bootstrap_mgrs{phase="Error"} 0x100`,
		},
		"MgrBootstrapCephCallsFailing": {
			load: `mgr_bootstrap_ceph_calls_total{command="mgr stat", result="ok"} 0+1x100
			       mgr_bootstrap_ceph_calls_total{command="mgr stat", result="unavailable"} 0+1x100`, fires: `{} 0.5`,
			not: `mgr_bootstrap_ceph_calls_total{command="mgr stat", result="ok"} 0+10x100
			      mgr_bootstrap_ceph_calls_total{command="mgr stat", result="unavailable"} 0+1x100`,
		},
		"MgrPolicyRefused": {
			load: `mgr_policy_state{operation="webhook", pod="a", state="invalid"} 1x100
			       mgr_policy_state{operation="webhook", pod="a", state="current"} 0x100`, fires: `{operation="webhook", pod="a"} 1`,
			not: `mgr_policy_state{operation="webhook", pod="a", state="invalid"} 0x100
			      mgr_policy_state{operation="webhook", pod="a", state="current"} 1x100`,
		},
		"MgrBootstrapDown": {
			load: `up{job="mgr-webhook"} 1x100`, fires: `{} 1`,
			not: `up{job="mgr-bootstrap-metrics", pod="a"} 1x100`,
		},
	}
	if got, want := slices.Sorted(maps.Keys(rules)), slices.Sorted(maps.Keys(cases)); !slices.Equal(got, want) {
		t.Fatalf("alerts %v, tested %v", got, want)
	}
	engine := promqltest.NewTestEngine(t, false, 0, 100000)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := rules[name]
			if r.For == 0 || (r.Labels["severity"] != "warning" && r.Labels["severity"] != "critical") || r.Annotations["summary"] == "" {
				t.Errorf("for %v, severity %q, summary %q", r.For, r.Labels["severity"], r.Annotations["summary"])
			}
			expr := strings.Join(strings.Fields(r.Expr), " ")
			promqltest.RunTest(t, "load 1m\n"+indent(tc.load)+"\neval instant at 90m "+expr+"\n  "+tc.fires+"\n", engine)
			promqltest.RunTest(t, "load 1m\n"+indent(tc.not)+"\neval instant at 90m "+expr+"\n", engine)
		})
	}
}

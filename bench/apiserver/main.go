// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Command apiserver measures what mgr Deployment writes cost through a real
// kube-apiserver: create, update and delete of N Deployments in each of five
// namespaces of one API server, one per admission setup: (a) none, (b) as
// shipped: our mutating webhook (one round trip) and the
// ValidatingAdmissionPolicy mgr-policy judging by an accepted MgrPolicy,
// (b') the webhook alone, (b”) a webhook answering every call at once with
// no change (the floor of any webhook round trip; the client sends the
// completed object, as in (a)), (c) the in-tree MutatingAdmissionPolicy of
// map.yaml doing (part of) the same completion. The writes of the setups
// are interleaved, one of each in turn (the order rotating), so that every
// setup meets the same API server, etcd and machine at the same moments:
// the ratios to (a) and (c) are not at the mercy of the noise between
// separate runs. p50/p99 per operation and setup.
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/webhook"
)

//go:embed map.yaml
var mapYAML string

const fsid = "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b"

// modeLabel on a namespace names the admission setup its mgrs meet.
const modeLabel = "bench.mgr.ceph.rook.io/mode"

var modes = []string{"none", "webhooks", "mutating", "noop", "map"}

func namespace(mode string) string { return "bench-" + mode }

func info(mode string) mutate.ClusterInfo {
	return mutate.ClusterInfo{Namespace: namespace(mode), FSID: fsid}
}

func main() {
	n := flag.Int("n", 500, "Deployments per operation and setup")
	flag.Parse()
	results, vapMs, err := measure(*n)
	if err != nil {
		fmt.Fprintf(os.Stderr, "apiserver bench: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("| admission | op | n | p50 ms | p99 ms | mean ms | p50 vs none | p50 vs map |\n|---|---|---|---|---|---|---|---|\n")
	ratio := func(a, b float64) string {
		if b <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	for _, op := range []string{"create", "update", "delete"} {
		base, inTree := pct(results["none"][op], 50), pct(results["map"][op], 50)
		for _, mode := range modes {
			l := results[mode][op]
			fmt.Printf("| %s | %s | %d | %.2f | %.2f | %.2f | %s | %s |\n", mode, op, len(l), pct(l, 50), pct(l, 99), mean(l), ratio(pct(l, 50), base), ratio(pct(l, 50), inTree))
		}
	}
	fmt.Printf("\nThe API server's ValidatingAdmissionPolicy plugin: %.3f ms per mgr create or update as shipped (mgr-policy), %.3f ms in the other setups (no binding matches).\n", vapMs[0], vapMs[1])
}

// measure sets up the five admission setups on one API server and returns
// each one's latencies per operation, and the ValidatingAdmissionPolicy
// plugin's mean time per create or update with and without mgr-policy.
func measure(n int) (map[string]map[string][]time.Duration, [2]float64, error) {
	var vapMs [2]float64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	crd, err := testenv.MgrPolicyCRD()
	if err != nil {
		return nil, vapMs, err
	}
	api, err := testenv.StartAPIServerWith(testenv.APIServerOptions{ShippedWebhooks: true, CRDs: []string{crd}})
	if err != nil {
		return nil, vapMs, err
	}
	defer api.Stop()
	cl := api.Client
	for _, mode := range modes {
		if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace(mode), Labels: map[string]string{modeLabel: mode}}}); err != nil {
			return nil, vapMs, err
		}
		if err := (testenv.CephCluster{Namespace: namespace(mode), FSID: fsid, MonHost: "v2:10.0.0.1:3300", Members: "a", AdminKeyring: "x"}).Create(ctx, cl); err != nil {
			return nil, vapMs, err
		}
	}
	// Also applies the shipped RBAC and admission policies.
	clusters, err := testenv.ServeWebhooks(ctx, api, mutate.DefaultPolicy())
	if err != nil {
		return nil, vapMs, err
	}
	if err := scope(ctx, cl); err != nil {
		return nil, vapMs, err
	}
	// The cluster objects were created just before: wait until the cache has them.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := clusters.Lookup(namespace("webhooks"))
		return err == nil, nil
	}); err != nil {
		return nil, vapMs, err
	}
	if err := serveNoop(ctx, api); err != nil {
		return nil, vapMs, err
	}
	// The final-object check as shipped: MgrPolicy default, accepted by the
	// controller's policy Watcher.
	if err := testenv.AcceptPolicies(ctx, api); err != nil {
		return nil, vapMs, err
	}
	if err := policyJudges(ctx, api); err != nil {
		return nil, vapMs, err
	}
	// Every setup admits a mgr as it should before the clock runs
	// (policies and configurations load asynchronously).
	for _, mode := range modes {
		var lastErr error
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			d := request(mode, "rook-ceph-mgr-probe", "probe")
			if lastErr = cl.Create(ctx, d, client.DryRunAll); lastErr != nil {
				return false, nil
			}
			return len(d.Spec.Template.Spec.Containers[0].Args) >= 10, nil
		}); err != nil {
			return nil, vapMs, fmt.Errorf("%s never completed a Deployment (last: %v)", mode, lastErr)
		}
	}
	out := map[string]map[string][]time.Duration{}
	ds := map[string][]*appsv1.Deployment{}
	for _, mode := range modes {
		out[mode] = map[string][]time.Duration{}
		for i := range n {
			ds[mode] = append(ds[mode], request(mode, "rook-ceph-mgr-m"+strconv.Itoa(i), "m"+strconv.Itoa(i)))
		}
	}
	// Each write of the i-th round in the setups' order rotated by i.
	interleave := func(op string, write func(*appsv1.Deployment) error) error {
		for i := range n {
			for k := range modes {
				mode := modes[(i+k)%len(modes)]
				t0 := time.Now()
				if err := write(ds[mode][i]); err != nil {
					return fmt.Errorf("%s %s: %w", mode, op, err)
				}
				out[mode][op] = append(out[mode][op], time.Since(t0))
			}
		}
		return nil
	}
	vapBefore, err := admissionPluginSeconds(ctx, api, "ValidatingAdmissionPolicy")
	if err != nil {
		return nil, vapMs, err
	}
	if err := interleave("create", func(d *appsv1.Deployment) error { return cl.Create(ctx, d) }); err != nil {
		return nil, vapMs, err
	}
	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"mgr","image":"quay.io/ceph/ceph:v19.2.2"}]}}}}`)
	if err := interleave("update", func(d *appsv1.Deployment) error {
		return cl.Patch(ctx, d, client.RawPatch(types.StrategicMergePatchType, patch))
	}); err != nil {
		return nil, vapMs, err
	}
	vapAfter, err := admissionPluginSeconds(ctx, api, "ValidatingAdmissionPolicy")
	if err != nil {
		return nil, vapMs, err
	}
	if err := interleave("delete", func(d *appsv1.Deployment) error { return cl.Delete(ctx, d) }); err != nil {
		return nil, vapMs, err
	}
	// The setups without mgr-policy's binding: the plugin's floor per write,
	// measured with dry-run creates in one of them.
	floorBefore, err := admissionPluginSeconds(ctx, api, "ValidatingAdmissionPolicy")
	if err != nil {
		return nil, vapMs, err
	}
	for i := range n {
		if err := cl.Create(ctx, request("map", "rook-ceph-mgr-f"+strconv.Itoa(i), "f"+strconv.Itoa(i)), client.DryRunAll); err != nil {
			return nil, vapMs, err
		}
	}
	floorAfter, err := admissionPluginSeconds(ctx, api, "ValidatingAdmissionPolicy")
	if err != nil {
		return nil, vapMs, err
	}
	vapMs[1] = (floorAfter - floorBefore) / float64(n) * 1000
	// 2n writes per setup: those of the four others each cost the floor.
	vapMs[0] = ((vapAfter-vapBefore)/float64(2*n)*1000 - float64(len(modes)-1)*vapMs[1])
	return out, vapMs, nil
}

// request is what a client sends for mgr id in mode's namespace: a minimal
// mgr where admission completes it, the completed one where nothing does.
func request(mode, name, id string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace(mode), Labels: map[string]string{"app": "rook-ceph-mgr", "mgr": id}}}
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1Container())
	if mode == "none" || mode == "noop" {
		res, errs := mutate.Complete(d, info(mode), mutate.DefaultPolicy())
		if len(errs) > 0 {
			panic(errs.ToAggregate())
		}
		return res.Deployment
	}
	return d
}

// inModes selects the namespaces of the given setups.
func inModes(modes ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: modeLabel, Operator: metav1.LabelSelectorOpIn, Values: modes}
}

// scope narrows each admission setup to its namespaces: the shipped
// mutating webhook to webhooks and mutating, the shipped mgr-policy binding
// to webhooks, the MAP (created here) to map.
func scope(ctx context.Context, cl client.Client) error {
	var mwc admissionregistrationv1.MutatingWebhookConfigurationList
	if err := cl.List(ctx, &mwc); err != nil {
		return err
	}
	narrowed := 0
	for i := range mwc.Items {
		c := &mwc.Items[i]
		for j := range c.Webhooks {
			if c.Webhooks[j].NamespaceSelector == nil {
				c.Webhooks[j].NamespaceSelector = &metav1.LabelSelector{}
			}
			sel := c.Webhooks[j].NamespaceSelector
			sel.MatchExpressions = append(sel.MatchExpressions, inModes("webhooks", "mutating"))
			narrowed++
		}
		if err := cl.Update(ctx, c); err != nil {
			return err
		}
	}
	if narrowed == 0 {
		return fmt.Errorf("no shipped mutating webhook installed")
	}
	var b admissionregistrationv1.ValidatingAdmissionPolicyBinding
	if err := cl.Get(ctx, client.ObjectKey{Name: "mgr-policy"}, &b); err != nil {
		return fmt.Errorf("the shipped mgr-policy binding: %w", err)
	}
	if b.Spec.MatchResources == nil {
		b.Spec.MatchResources = &admissionregistrationv1.MatchResources{}
	}
	b.Spec.MatchResources.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{inModes("webhooks")}}
	if err := cl.Update(ctx, &b); err != nil {
		return err
	}
	for _, doc := range strings.Split(mapYAML, "\n---\n") {
		var obj client.Object = &admissionregistrationv1.MutatingAdmissionPolicy{}
		if strings.Contains(doc, "kind: MutatingAdmissionPolicyBinding") {
			obj = &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return err
		}
		if mb, ok := obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding); ok {
			if mb.Spec.MatchResources == nil {
				mb.Spec.MatchResources = &admissionregistrationv1.MatchResources{}
			}
			mb.Spec.MatchResources.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{inModes("map")}}
		}
		if err := cl.Create(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// serveNoop serves a copy of the shipped mutating webhook, scoped to the
// noop namespace, with a handler that admits every call unchanged: what the
// round trip itself costs.
func serveNoop(ctx context.Context, api *testenv.APIServer) error {
	const path = "/noop"
	wo := api.Env.WebhookInstallOptions
	srv := ctrlwebhook.NewServer(ctrlwebhook.Options{Host: wo.LocalServingHost, Port: wo.LocalServingPort + 1, CertDir: wo.LocalServingCertDir})
	srv.Register(path, &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Allowed("")
	})})
	go func() { _ = srv.Start(ctx) }()
	var shipped admissionregistrationv1.MutatingWebhookConfigurationList
	if err := api.Client.List(ctx, &shipped); err != nil {
		return err
	}
	var noop *admissionregistrationv1.MutatingWebhook
	for _, c := range shipped.Items {
		for _, w := range c.Webhooks {
			if w.ClientConfig.URL != nil && strings.HasSuffix(*w.ClientConfig.URL, webhook.MutatePath) {
				noop = w.DeepCopy()
			}
		}
	}
	if noop == nil {
		return fmt.Errorf("no shipped webhook at %s", webhook.MutatePath)
	}
	url := fmt.Sprintf("https://%s:%d%s", wo.LocalServingHost, wo.LocalServingPort+1, path)
	noop.Name, noop.ClientConfig.URL = "noop.bench.mgr.ceph.rook.io", &url
	noop.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{inModes("noop")}}
	return api.Client.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-noop"}, Webhooks: []admissionregistrationv1.MutatingWebhook{*noop}})
}

// admissionPluginSeconds is the time the API server's admission plugin
// named plugin has taken so far (its duration histogram's sum).
func admissionPluginSeconds(ctx context.Context, api *testenv.APIServer, plugin string) (float64, error) {
	cs, err := kubernetes.NewForConfig(api.Config)
	if err != nil {
		return 0, err
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "apiserver_admission_controller_admission_duration_seconds_sum{") && strings.Contains(line, `name="`+plugin+`"`) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				return 0, err
			}
			sum += v
		}
	}
	return sum, nil
}

// policyClient is a client that knows MgrPolicy.
func policyClient(api *testenv.APIServer) client.Client {
	scheme, err := testenv.PolicyScheme()
	if err != nil {
		panic(err)
	}
	cl, err := client.New(api.Config, client.Options{Scheme: scheme})
	if err != nil {
		panic(err)
	}
	return cl
}

// policyJudges proves that the admission policy mgr-policy judges the mgr
// writes of the webhooks setup and of no other, and leaves MgrPolicy default
// at the built-in policy: under a MgrPolicy stricter than the webhook's (the
// built-in, not watched here) the webhook admits a Squid mgr and the
// admission policy alone refuses it; back at the built-in policy, it is
// admitted again.
func policyJudges(ctx context.Context, api *testenv.APIServer) error {
	pc := policyClient(api)
	for _, stricter := range []bool{true, false} {
		spec := mutate.PolicySpec{}
		if stricter {
			spec.Images.MinimumCephVersion = "20.0.0"
		}
		if _, err := testenv.SetMgrPolicy(ctx, pc, spec); err != nil {
			return err
		}
		for _, mode := range modes {
			want := stricter && mode == "webhooks"
			var last error
			if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				last = pc.Create(ctx, request(mode, "rook-ceph-mgr-probe", "probe"), client.DryRunAll)
				refused := last != nil && strings.Contains(last.Error(), "ValidatingAdmissionPolicy 'mgr-policy'")
				return refused == want && (refused || last == nil), nil
			}); err != nil {
				return fmt.Errorf("ValidatingAdmissionPolicy mgr-policy in %s: want refused=%v under %+v, got %v", namespace(mode), want, spec, last)
			}
		}
	}
	return nil
}

func pct(l []time.Duration, p int) float64 {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	return float64(s[min(len(s)-1, len(s)*p/100)]) / float64(time.Millisecond)
}

func mean(l []time.Duration) float64 {
	var sum time.Duration
	for _, x := range l {
		sum += x
	}
	return float64(sum) / float64(len(l)) / float64(time.Millisecond)
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Command apiserver measures what mgr Deployment writes cost through a real
// kube-apiserver: create, update and delete of N Deployments (a) with no
// admission, (b) as shipped: our mutating webhook (one round trip) and the
// ValidatingAdmissionPolicy mgr-policy judging by an accepted MgrPolicy,
// (b') the webhook alone, (c) with the in-tree MutatingAdmissionPolicy in
// map.yaml doing (part of) the same completion; p50/p99 per operation and
// the ratios to (a) and (c).
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/internal/testenv"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

//go:embed map.yaml
var mapYAML string

const ns = "rook-ceph"

var info = mutate.ClusterInfo{Namespace: ns, FSID: "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b"}

func main() {
	n := flag.Int("n", 500, "Deployments per operation")
	modes := flag.String("modes", "none,webhooks,mutating,map", "admission setups to measure: none, webhooks (as shipped), mutating (the webhook without the admission policy), map")
	flag.Parse()
	results := map[string]map[string][]time.Duration{}
	order := strings.Split(*modes, ",")
	for _, mode := range order {
		r, err := measure(mode, *n)
		if err != nil {
			fmt.Fprintf(os.Stderr, "apiserver bench (%s): %v\n", mode, err)
			os.Exit(1)
		}
		results[mode] = r
	}
	fmt.Printf("| admission | op | n | p50 ms | p99 ms | mean ms | p50 vs none | p50 vs map |\n|---|---|---|---|---|---|---|---|\n")
	ratio := func(a, b float64) string {
		if b <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	defer func() {
		fmt.Printf("\nThe API server's ValidatingAdmissionPolicy plugin, mean per mgr create or update:")
		for _, mode := range order {
			fmt.Printf(" %s %.3f ms;", mode, vapCost[mode]*1000)
		}
		fmt.Println()
	}()
	for _, op := range []string{"create", "update", "delete"} {
		base, inTree := pct(results["none"][op], 50), pct(results["map"][op], 50)
		for _, mode := range order {
			l := results[mode][op]
			fmt.Printf("| %s | %s | %d | %.2f | %.2f | %.2f | %s | %s |\n", mode, op, len(l), pct(l, 50), pct(l, 99), mean(l), ratio(pct(l, 50), base), ratio(pct(l, 50), inTree))
		}
	}
}

func measure(mode string, n int) (map[string][]time.Duration, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	shipped := mode == "webhooks" || mode == "mutating"
	o := testenv.APIServerOptions{ShippedWebhooks: shipped}
	if shipped {
		crd, err := testenv.MgrPolicyCRD()
		if err != nil {
			return nil, err
		}
		o.CRDs = []string{crd}
	}
	api, err := testenv.StartAPIServerWith(o)
	if err != nil {
		return nil, err
	}
	defer api.Stop()
	cl := api.Client
	if err := (testenv.CephCluster{Namespace: ns, FSID: info.FSID, MonHost: "v2:10.0.0.1:3300", Members: "a", AdminKeyring: "x"}).Create(ctx, cl); err != nil {
		return nil, err
	}
	switch mode {
	case "webhooks", "mutating":
		clusters, err := testenv.ServeWebhooks(ctx, api, mutate.DefaultPolicy())
		if err != nil {
			return nil, err
		}
		// The cluster objects were created just before: wait until the cache has them.
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			_, err := clusters.Lookup(ns)
			return err == nil, nil
		}); err != nil {
			return nil, err
		}
		// The final-object check as shipped: MgrPolicy default, accepted
		// by the controller's policy Watcher.
		if err := testenv.AcceptPolicies(ctx, api); err != nil {
			return nil, err
		}
		if err := policyJudges(ctx, api, true); err != nil {
			return nil, err
		}
		if mode == "mutating" {
			// The webhook's round trip alone: the admission policy's binding gone.
			if err := cl.Delete(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "mgr-policy"}}); err != nil {
				return nil, err
			}
			if err := policyJudges(ctx, api, false); err != nil {
				return nil, err
			}
		}
	case "map":
		for _, doc := range strings.Split(mapYAML, "\n---\n") {
			var obj client.Object = &admissionregistrationv1.MutatingAdmissionPolicy{}
			if strings.Contains(doc, "kind: MutatingAdmissionPolicyBinding") {
				obj = &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
			}
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				return nil, err
			}
			if err := cl.Create(ctx, obj); err != nil {
				return nil, err
			}
		}
	}
	// Wait until the setup completes a Deployment (policies load asynchronously).
	if mode != "none" {
		var lastErr error
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			d := deployment("rook-ceph-mgr-probe", "probe")
			if err := cl.Create(ctx, d); err != nil {
				lastErr = err
				return false, nil
			}
			_ = cl.Delete(ctx, d)
			return len(d.Spec.Template.Spec.Containers[0].Args) >= 10, nil
		}); err != nil {
			return nil, fmt.Errorf("%s never completed a Deployment (last: %v)", mode, lastErr)
		}
	}
	out := map[string][]time.Duration{}
	ds := make([]*appsv1.Deployment, n)
	for i := range n {
		ds[i] = deployment("rook-ceph-mgr-m"+strconv.Itoa(i), "m"+strconv.Itoa(i))
		if mode == "none" {
			// Without admission the client must send what would be stored.
			res, _ := mutate.Complete(ds[i], info, mutate.DefaultPolicy())
			ds[i] = res.Deployment
		}
	}
	vapBefore, err := admissionPluginSeconds(ctx, api, "ValidatingAdmissionPolicy")
	if err != nil {
		return nil, err
	}
	for i := range n {
		t0 := time.Now()
		if err := cl.Create(ctx, ds[i]); err != nil {
			return nil, err
		}
		out["create"] = append(out["create"], time.Since(t0))
	}
	for i := range n {
		patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"mgr","image":"quay.io/ceph/ceph:v16.2.14"}]}}}}`)
		t0 := time.Now()
		if err := cl.Patch(ctx, ds[i], client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
			return nil, err
		}
		out["update"] = append(out["update"], time.Since(t0))
	}
	vapAfter, err := admissionPluginSeconds(ctx, api, "ValidatingAdmissionPolicy")
	if err != nil {
		return nil, err
	}
	vapCost[mode] = (vapAfter - vapBefore) / float64(2*n)
	for i := range n {
		t0 := time.Now()
		if err := cl.Delete(ctx, ds[i]); err != nil {
			return nil, err
		}
		out["delete"] = append(out["delete"], time.Since(t0))
	}
	if shipped {
		// As it was at the start.
		if err := policyJudges(ctx, api, mode == "webhooks"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// vapCost is, per mode, the mean time the API server's
// ValidatingAdmissionPolicy plugin took per mgr create and update.
var vapCost = map[string]float64{}

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

// policyJudges proves that the admission policy mgr-policy judges this API
// server's mgr writes (or, judges false, that it does not), and leaves
// MgrPolicy default at the built-in policy: under a MgrPolicy stricter than
// the webhook's (the built-in, not watched here) the webhook admits a
// Pacific mgr and the admission policy alone refuses it; back at the
// built-in policy, it is admitted again.
func policyJudges(ctx context.Context, api *testenv.APIServer, judges bool) error {
	pc := policyClient(api)
	probe := deployment("rook-ceph-mgr-probe", "probe")
	for _, step := range []struct {
		spec   mutate.PolicySpec
		refuse bool
	}{{mutate.PolicySpec{Images: mutate.ImagePolicy{MinimumCephVersion: "17.0.0"}}, judges}, {mutate.PolicySpec{}, false}} {
		if _, err := testenv.SetMgrPolicy(ctx, pc, step.spec); err != nil {
			return err
		}
		var last error
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			last = pc.Create(ctx, probe.DeepCopy(), client.DryRunAll)
			refused := last != nil && strings.Contains(last.Error(), "ValidatingAdmissionPolicy 'mgr-policy'")
			return refused == step.refuse && (refused || last == nil), nil
		}); err != nil {
			return fmt.Errorf("ValidatingAdmissionPolicy mgr-policy: want refused=%v under %+v, got %v", step.refuse, step.spec, last)
		}
	}
	return nil
}
func deployment(name, id string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "rook-ceph-mgr", "mgr": id}}}
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1Container())
	return d
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

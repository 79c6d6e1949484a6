// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Command apiserver measures what mgr Deployment writes cost through a real
// kube-apiserver: create, update and delete of N Deployments (a) with no
// admission, (b) with our mutating and validating webhooks, (c) with the
// in-tree MutatingAdmissionPolicy in map.yaml doing (part of) the same
// completion; p50/p99 per operation and the ratios to (a).
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
	modes := flag.String("modes", "none,webhooks,map", "admission setups to measure")
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
	fmt.Printf("| admission | op | n | p50 ms | p99 ms | mean ms | p50 vs none |\n|---|---|---|---|---|---|---|\n")
	for _, op := range []string{"create", "update", "delete"} {
		base := pct(results["none"][op], 50)
		for _, mode := range order {
			l := results[mode][op]
			ratio := "—"
			if base > 0 {
				ratio = fmt.Sprintf("%.2f", pct(l, 50)/base)
			}
			fmt.Printf("| %s | %s | %d | %.2f | %.2f | %.2f | %s |\n", mode, op, len(l), pct(l, 50), pct(l, 99), mean(l), ratio)
		}
	}
}

func measure(mode string, n int) (map[string][]time.Duration, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	api, err := testenv.StartAPIServerWith(testenv.APIServerOptions{ShippedWebhooks: mode == "webhooks"})
	if err != nil {
		return nil, err
	}
	defer api.Stop()
	cl := api.Client
	if err := (testenv.CephCluster{Namespace: ns, FSID: info.FSID, MonHost: "v2:10.0.0.1:3300", Members: "a", AdminKeyring: "x"}).Create(ctx, cl); err != nil {
		return nil, err
	}
	switch mode {
	case "webhooks":
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
	for i := range n {
		t0 := time.Now()
		if err := cl.Delete(ctx, ds[i]); err != nil {
			return nil, err
		}
		out["delete"] = append(out["delete"], time.Since(t0))
	}
	return out, nil
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

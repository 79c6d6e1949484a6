// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// FakeNodes is how many kwok nodes pods are scheduled to (FakeNode(0),
// ...): as many as a Ceph cluster runs mgrs in the tests, so that mgrs of
// one cluster, kept apart by completion's required anti-affinity, all run.
const FakeNodes = 3

// FakeNode is the name of kwok node i.
func FakeNode(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// Workloads are the components that turn Deployments into Ready pods without
// a kubelet: kube-controller-manager (deployment, replicaset, garbage
// collector, node lifecycle, namespace, endpointslice controllers), kube-scheduler, and kwok
// playing the kubelet of FakeNodes fake nodes.
type Workloads struct {
	Dir   string
	procs []*Process
}

// WorkloadsOptions configure StartWorkloadsWith.
type WorkloadsOptions struct {
	// RealNodes is for real kubelets (hack/node.sh): no kwok and no fake
	// node, and the controllers that pods on a real kubelet need and a kwok
	// pod does not: ServiceAccounts in new namespaces, the kube-root-ca.crt
	// ConfigMap every projected token volume mounts, and the disruption
	// controller behind PodDisruptionBudgets.
	RealNodes bool
}

// StartWorkloads starts them against a and waits until the fake nodes are Ready.
func StartWorkloads(ctx context.Context, a *APIServer) (*Workloads, error) {
	return StartWorkloadsWith(ctx, a, WorkloadsOptions{})
}

// StartWorkloadsWith starts them as o says and waits until the fake nodes are
// Ready.
func StartWorkloadsWith(ctx context.Context, a *APIServer, o WorkloadsOptions) (w *Workloads, err error) {
	cl := a.Client
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	for _, bin := range []string{"kube-controller-manager", "kube-scheduler", "kwok"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, fmt.Errorf("%s missing from %s: run hack/build-binaries.sh", bin, assets)
		}
	}
	dir, err := os.MkdirTemp("", "mgr-webhook-workloads-")
	if err != nil {
		return nil, err
	}
	w = &Workloads{Dir: dir}
	defer func() {
		if err != nil {
			w.Stop()
		}
	}()
	stages, err := filepath.Glob(filepath.Join(assets, "kwok-stages", "*.yaml"))
	if err != nil || len(stages) == 0 {
		return w, fmt.Errorf("kwok stage configs missing from %s/kwok-stages: run hack/build-binaries.sh", assets)
	}
	controllers := "deployment-controller,replicaset-controller,garbage-collector-controller,node-lifecycle-controller,namespace-controller,endpointslice-controller"
	if o.RealNodes {
		controllers += ",serviceaccount-controller,root-ca-certificate-publisher-controller,disruption-controller"
	}
	for _, c := range []struct {
		bin  string
		args []string
	}{
		{"kube-controller-manager", []string{"--kubeconfig=" + a.Kubeconfig, "--leader-elect=false", "--secure-port=0",
			"--controllers=" + controllers, "--node-monitor-grace-period=40s"}},
		{"kube-scheduler", []string{"--kubeconfig=" + a.Kubeconfig, "--leader-elect=false", "--secure-port=0"}},
		{"kwok", []string{"--kubeconfig=" + a.Kubeconfig, "--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake", "--server-address=127.0.0.1:0",
			"--config=" + strings.Join(stages, ",")}},
	} {
		if c.bin == "kwok" && o.RealNodes {
			continue
		}
		p, err := Spawn(filepath.Join(assets, c.bin), filepath.Join(dir, c.bin+".log"), c.args...)
		if err != nil {
			return w, err
		}
		w.procs = append(w.procs, p)
	}
	if o.RealNodes {
		return w, nil
	}
	// Room for the largest bench (1,000 mgrs and then one more) with a
	// margin: a full node leaves the next pod Pending, unschedulable.
	room := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4Ti"), corev1.ResourcePods: resource.MustParse("10000")}
	for i := range FakeNodes {
		name := FakeNode(i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
				Labels: map[string]string{"type": "kwok", corev1.LabelHostname: name}},
			Status: corev1.NodeStatus{
				Allocatable: room,
				Capacity:    room,
			},
		}
		if err := cl.Create(ctx, node); err != nil {
			return w, err
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, p := range w.procs {
			if p.Exited() {
				return false, fmt.Errorf("%s exited; see %s", filepath.Base(p.Name), p.Log)
			}
		}
		for i := range FakeNodes {
			n := &corev1.Node{}
			if err := cl.Get(ctx, client.ObjectKey{Name: FakeNode(i)}, n); err != nil || !nodeReady(n) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return w, fmt.Errorf("fake nodes never became Ready and untainted: %w (logs in %s)", err, dir)
	}
	return w, nil
}

// Stop ends the processes and removes their logs.
func (w *Workloads) Stop() {
	for i := len(w.procs) - 1; i >= 0; i-- {
		w.procs[i].Stop(10 * time.Second)
	}
	if os.Getenv("MGR_WEBHOOK_KEEP_LOGS") == "" {
		os.RemoveAll(w.Dir)
	}
}

// MinimalMgr is the shipped minimal example (manifests/examples) for mgr id
// in ns, with annotations, and with container ports when ports (prometheus,
// dashboard) differ from the defaults: locally every mgr daemon shares the
// host, so each listens on ports of its own.
func MinimalMgr(root, ns, id string, ports [2]int32, annotations map[string]string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(root, "manifests", "examples", "minimal-mgr.yaml"))
	if err != nil {
		return nil, err
	}
	s := string(data)
	s = strings.Replace(s, "namespace: rook-ceph", "namespace: "+ns, 1)
	s = strings.Replace(s, "name: rook-ceph-mgr-a", "name: rook-ceph-mgr-"+id, 1)
	s = strings.Replace(s, "    mgr: a", "    mgr: "+id, 1)
	if len(annotations) > 0 {
		var b strings.Builder
		b.WriteString("  annotations:\n")
		for _, k := range slices.Sorted(maps.Keys(annotations)) {
			fmt.Fprintf(&b, "    %s: %q\n", k, annotations[k])
		}
		s = strings.Replace(s, "  labels:\n", b.String()+"  labels:\n", 1)
	}
	if ports != [2]int32{} && ports != [2]int32{contract.PortMetrics, contract.PortDashboard} {
		s += fmt.Sprintf("          ports:\n            - {name: http-metrics, containerPort: %d, protocol: TCP}\n            - {name: dashboard, containerPort: %d, protocol: TCP}\n", ports[0], ports[1])
	}
	return []byte(s), nil
}

// MinimalMgrObject is MinimalMgr with the default ports and no
// annotations, as the Deployment a client creates. It returns an error
// rather than failing a test: writers call it from their own goroutines.
func MinimalMgrObject(root, ns, id string) (*appsv1.Deployment, error) {
	data, err := MinimalMgr(root, ns, id, [2]int32{}, nil)
	if err != nil {
		return nil, err
	}
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(data, d); err != nil {
		return nil, fmt.Errorf("the minimal mgr example: %w", err)
	}
	return d, nil
}

// nodeReady: Ready and untainted.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return len(n.Spec.Taints) == 0
		}
	}
	return false
}

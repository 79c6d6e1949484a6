// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build node

// Package node proves hack/node.sh: a real kubelet + containerd node joins
// the local control plane, runs pods from images made without a registry,
// and leaves nothing behind. Root only; `make e2e-node` runs it.
package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

func TestRealNode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("a real node needs root: run make e2e-node as root")
	}
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	api, err := testenv.StartAPIServerWith(testenv.APIServerOptions{RealNodes: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Stop)
	work, err := testenv.StartWorkloadsWith(ctx, api, testenv.WorkloadsOptions{RealNodes: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(work.Stop)

	nodeDir := filepath.Join(t.TempDir(), "node")
	node := func(t *testing.T, args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(root, "hack", "node.sh"), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+api.Kubeconfig, "NODE_DIR="+nodeDir, "NODE_NAME=real-node",
			"KUBELET_CLIENT_CA="+filepath.Join(api.CertDir, testenv.KubeletClientCAFile))
		out, err := cmd.Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			for _, l := range []string{"containerd.log", "kubelet.log", "kube-proxy.log"} {
				if b, rerr := os.ReadFile(filepath.Join(nodeDir, l)); rerr == nil {
					t.Logf("%s (last 3000 bytes):\n%s", l, tail(b, 3000))
				}
			}
			t.Fatalf("hack/node.sh %v: %v\n%s", args, err, stderr)
		}
		return strings.TrimSpace(string(out))
	}
	name := node(t, "up")
	downed := false
	t.Cleanup(func() {
		if !downed {
			node(t, "down")
		}
	})
	if name != "real-node" {
		t.Fatalf("hack/node.sh up printed %q, want the node's name", name)
	}
	image, err := os.ReadFile(filepath.Join(nodeDir, "ceph-image"))
	if err != nil {
		t.Fatalf("the Ceph image hack/node.sh imported: %v", err)
	}
	cephImage := strings.TrimSpace(string(image))

	ns := "node-test"
	if err := api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	// The ServiceAccount controller gives the namespace its default account,
	// which every pod there needs.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return api.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{}) == nil, nil
	})
	if err != nil {
		t.Fatalf("ServiceAccount %s/default never made: %v", ns, err)
	}
	// Ceph's own CLI from the image made of Debian's packages, in a pod the
	// real kubelet runs (its sandbox is our pause image).
	no := false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ceph-version", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName: name, RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{{Name: "ceph", Image: cephImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"ceph", "--version"}}},
		},
	}
	if err := api.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := api.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, nil
		}
		last = fmt.Sprintf("phase %s, statuses %+v", pod.Status.Phase, pod.Status.ContainerStatuses)
		return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed, nil
	})
	if err != nil || pod.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("pod ceph-version on the real node: %v; %s", err, last)
	}
	if pod.Status.PodIP == "" || pod.Status.ContainerStatuses[0].State.Terminated == nil || pod.Status.ContainerStatuses[0].State.Terminated.ExitCode != 0 {
		t.Errorf("ceph --version on the real node: pod IP %q, %+v", pod.Status.PodIP, pod.Status.ContainerStatuses)
	}
	t.Logf("ceph --version ran in a real container on %s (pod IP %s)", name, pod.Status.PodIP)

	// kube-proxy: a Service's ClusterIP leads to its pod, reached from another
	// pod through the node's rules (python3 serves and fetches; it is in the
	// Ceph image).
	labels := map[string]string{"app": "web"}
	web := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName: name, AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{{Name: "web", Image: pod.Spec.Containers[0].Image, ImagePullPolicy: corev1.PullNever,
				Command:        []string{"python3", "-m", "http.server", "8080"},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1}}},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	for _, o := range []client.Object{web, svc} {
		if err := api.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	fetch := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "fetch", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName: name, RestartPolicy: corev1.RestartPolicyOnFailure, AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{{Name: "fetch", Image: pod.Spec.Containers[0].Image, ImagePullPolicy: corev1.PullNever,
				Command: []string{"python3", "-c", "import urllib.request; urllib.request.urlopen('http://" + svc.Spec.ClusterIP + ":80/', timeout=5)"}}},
		},
	}
	if err := api.Client.Create(ctx, fetch); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := api.Client.Get(ctx, client.ObjectKeyFromObject(fetch), fetch); err != nil {
			return false, nil
		}
		last = fmt.Sprintf("phase %s, statuses %+v", fetch.Status.Phase, fetch.Status.ContainerStatuses)
		return fetch.Status.Phase == corev1.PodSucceeded, nil
	})
	if err != nil {
		t.Fatalf("a pod fetching Service web's ClusterIP %s: %v; %s", svc.Spec.ClusterIP, err, last)
	}
	t.Logf("Service web reached on its ClusterIP %s from a pod (kube-proxy, nftables)", svc.Spec.ClusterIP)

	// The e2e suite's remote mode, by the steps hack/e2e-kind.sh takes after
	// kind has made its cluster and loaded the images: the release manifests
	// (self-signed: no cert-manager image can be had here), three Ceph
	// clusters with their mons in pods, the suite with the tests that need
	// real pods (build tag node).
	t.Run("the e2e suite on the real node", func(t *testing.T) {
		node(t, "load", "e2e")
		cmd := exec.Command(filepath.Join(root, "hack", "e2e-remote.sh"))
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "KUBECONFIG="+api.Kubeconfig, "KUBECTL="+api.Kubectl, "E2E_IMAGE_TAG=e2e",
			"CERT_MODE=self-signed", "E2E_CEPH_IMAGE="+cephImage, "E2E_GO_TEST_FLAGS=-tags=node")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("hack/e2e-remote.sh on the real node: %v (its output above)", err)
			for _, c := range [][]string{{"get", "pods", "-A", "-o", "wide"}, {"get", "events", "-A", "--sort-by=.lastTimestamp"}} {
				out, _ := exec.Command(api.Kubectl, append([]string{"--kubeconfig", api.Kubeconfig}, c...)...).CombinedOutput()
				t.Logf("kubectl %s:\n%s", strings.Join(c, " "), tail(out, 6000))
			}
		}
	})

	node(t, "down")
	downed = true
	if b, err := os.ReadFile("/proc/mounts"); err != nil || strings.Contains(string(b), nodeDir) {
		t.Errorf("mounts under %s left after hack/node.sh down: %v", nodeDir, err)
	}
	if _, err := os.Stat(nodeDir); !os.IsNotExist(err) {
		t.Errorf("%s left after hack/node.sh down: %v", nodeDir, err)
	}
	if out, _ := exec.Command("pgrep", "-f", nodeDir).Output(); len(out) > 0 {
		t.Errorf("processes of the node left after hack/node.sh down: %s", out)
	}
	// Nothing of the node's network: rules, namespaces, devices.
	for _, c := range [][]string{{"iptables-save"}, {"ip6tables-save"}, {"nft", "list", "tables"}, {"ip", "netns", "list"}, {"ip", "-o", "link"}} {
		out, err := exec.Command(c[0], c[1:]...).Output()
		if err != nil {
			t.Errorf("%v: %v", c, err)
		}
		for _, left := range []string{"KUBE-", "CNI-", "kube-proxy", "cni-", "veth", "mgrnode0"} {
			if strings.Contains(string(out), left) {
				t.Errorf("%v after hack/node.sh down still shows %q:\n%s", c, left, out)
			}
		}
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

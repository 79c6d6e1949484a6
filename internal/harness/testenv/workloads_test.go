// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDeploymentBecomesReadyPod proves the substrate: a Deployment turns into
// a scheduled, Ready pod on the kwok node, with no kubelet.
func TestDeploymentBecomesReadyPod(t *testing.T) {
	ctx := t.Context()
	api, err := StartAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Stop()
	cl := api.Client
	w, err := StartWorkloads(ctx, api)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	labels := map[string]string{"app": "demo"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example/c:1"}}}},
		},
	}
	if err := cl.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := cl.List(ctx, pods, client.InNamespace("default"), client.MatchingLabels(labels)); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && strings.HasPrefix(p.Spec.NodeName, "kwok-node-") {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no Ready pod: %v (logs in %s)", err, w.Dir)
	}
}

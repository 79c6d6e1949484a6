// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestRestartAPIServer: the same client reads, after the restart, what it
// wrote before (same etcd, same certificates and credentials).
func TestRestartAPIServer(t *testing.T) {
	ctx := t.Context()
	a, err := StartAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before", Namespace: "default"}}
	if err := a.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	oldPid, err := a.apiServerPid()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		down, err := a.RestartAPIServer(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kube-apiserver did not answer for %s", down)
		if err := a.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
			t.Fatalf("after the restart: %v", err)
		}
		pid, _ := a.apiServerPid()
		if pid == oldPid {
			t.Fatalf("pid %d unchanged: not restarted", pid)
		}
		oldPid = pid
	}
}

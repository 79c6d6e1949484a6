// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestLabelledSecretsDoNotFillTheController runs last (its file's name):
// its 420 MiB of Secrets load etcd and the API server, which the timed
// tests before it must not share. Anyone who may create Secrets in
// some namespace can label them app=rook-ceph-mgr. 600 such Secrets of
// 700 KiB each (420 MiB) in a tenant namespace, once the running
// controller's cache has seen every one, leave its heap within 50 MiB of
// what it was before: the cache holds Secrets' metadata, never their data.
func TestLabelledSecretsDoNotFillTheController(t *testing.T) {
	const n, size = 600, 700 << 10
	ctx := context.Background()
	ns := "tenant-secrets"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := k8s.DeleteAllOf(context.Background(), &corev1.Secret{}, client.InNamespace(ns)); err != nil {
			t.Errorf("removing the Secrets: %v", err)
		}
	})
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	seen := func() int {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
		if err := controllerCache.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	before := heap()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	start := time.Now()
	for i := range n {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("big-%03d", i), Labels: map[string]string{"app": "rook-ceph-mgr"}},
			Data: map[string][]byte{"blob": data}}
		if err := k8s.Create(ctx, s); err != nil {
			t.Fatalf("secret %d: %v", i, err)
		}
	}
	t.Logf("%d Secrets of %d KiB created in %s", n, size>>10, time.Since(start).Round(time.Second))
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return seen() == n, nil
	}); err != nil {
		t.Fatalf("the controller's cache saw %d of the %d Secrets", seen(), n)
	}
	after := heap()
	grew := int64(after) - int64(before)
	t.Logf("heap %d MiB before, %d MiB with the %d Secrets in the controller's cache (%+d MiB)", before>>20, after>>20, n, grew>>20)
	if grew > 50<<20 {
		t.Errorf("the heap grew by %d MiB with %d labelled Secrets of %d KiB: the cache holds their data", grew>>20, n, size>>10)
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import corev1 "k8s.io/api/core/v1"

func corev1Container() corev1.Container {
	return corev1.Container{Name: "mgr", Image: "quay.io/ceph/ceph:v19.2.3"}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package v1alpha1 is the project's API: MgrPolicy, the site's policy for
// mgr Deployments as a cluster-scoped object that the webhook and the
// controller watch.
//
// +kubebuilder:object:generate=true
// +groupName=mgr.ceph.rook.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API's group and version.
	GroupVersion = schema.GroupVersion{Group: "mgr.ceph.rook.io", Version: "v1alpha1"}
	// SchemeBuilder registers the API's types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	// AddToScheme adds the API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

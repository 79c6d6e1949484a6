// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/rook-mgr/mgr-webhook/mutate"
)

// TestReviewsDecode: every AdmissionReview the load sends decodes as a
// controller-runtime webhook decodes it; a body the servers refuse would
// measure refusals, not admissions.
func TestReviewsDecode(t *testing.T) {
	bodies, err := reviews("../..", mutate.ClusterInfo{Namespace: "rook-ceph", FSID: "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b"})
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := admissionv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	for name, body := range bodies {
		ar := &admissionv1.AdmissionReview{}
		if _, _, err := decoder.Decode(body, nil, ar); err != nil || ar.Request == nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

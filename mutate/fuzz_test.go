// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/internal/harness/golden"
)

// FuzzComplete: for any Deployment, Complete never panics; what it accepts it
// completes idempotently (a second Complete changes nothing), and the
// completion introduces no violation: every error Validate finds in
// Complete(x) is one Validate finds in x already (same type, field and value),
// except on the init containers' image, which is derived from the user's mgr
// image and reported again there.
func FuzzComplete(f *testing.F) {
	cases, err := golden.Cases("..")
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range cases {
		y, err := os.ReadFile(c.Input)
		if err != nil {
			f.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(y)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(j)
	}
	p := DefaultPolicy()
	f.Fuzz(func(t *testing.T, raw []byte) {
		x := &appsv1.Deployment{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, x); err != nil {
			return
		}
		info := ClusterInfo{Namespace: x.Namespace, FSID: "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b"}
		once, errs := Complete(x, info, p)
		if len(errs) > 0 {
			return
		}
		twice, errs := Complete(once.Deployment, info, p)
		if len(errs) > 0 || twice.Changed != 0 || !equality.Semantic.DeepEqual(twice.Deployment, once.Deployment) {
			t.Fatalf("not idempotent: changed %v, errors %v, for %s", twice.Changed, errs, raw)
		}
		introduced := ratchet(Validate(once.Deployment, info, p), Validate(x, info, p))
		for _, e := range introduced {
			if strings.HasPrefix(e.Field, "spec.template.spec.initContainers[") && strings.HasSuffix(e.Field, "].image") {
				continue
			}
			t.Fatalf("Complete introduced %v for %s", e, raw)
		}
	})
}

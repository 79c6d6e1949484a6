// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	stdjson "encoding/json"
	"reflect"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/rook-mgr/mgr-webhook/mutate"
)

// TestPatchEncoderAgreesWithEncodingJSON: the patch is encoded with
// goccy/go-json (faster), which ignores `omitzero` and so writes
// "creationTimestamp":null where encoding/json omits the field. That is
// irrelevant to what is stored: the two encodings differ only by null
// members, and both patches decode to the same Deployment.
func TestPatchEncoderAgreesWithEncodingJSON(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			in := decode(t, f.raw)
			res, _ := mutate.Complete(in, clusters[in.Namespace], f.policy)
			fast, err := patchFor(res)
			if err != nil {
				t.Fatal(err)
			}
			type op struct {
				Op    string `json:"op"`
				Path  string `json:"path"`
				Value any    `json:"value"`
			}
			ops := []op{}
			for _, sp := range sectionPatches {
				if res.Changed&sp.section != 0 {
					ops = append(ops, op{"add", sp.path, sp.value(res.Deployment)})
				}
			}
			std, err := stdjson.Marshal(ops)
			if err != nil {
				t.Fatal(err)
			}

			var a, b any
			if err := stdjson.Unmarshal(fast, &a); err != nil {
				t.Fatalf("goccy's patch is not JSON: %v\n%s", err, fast)
			}
			if err := stdjson.Unmarshal(std, &b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(withoutNulls(a), withoutNulls(b)) {
				t.Errorf("the encoders differ beyond null members:\ngoccy:         %s\nencoding/json: %s", fast, std)
			}

			apply := func(patch []byte) []byte {
				p, err := jsonpatchapply.DecodePatch(patch)
				if err != nil {
					t.Fatal(err)
				}
				out, err := p.Apply(f.raw)
				if err != nil {
					t.Fatalf("patch does not apply: %v\n%s", err, patch)
				}
				return out
			}
			if got, want := decode(t, apply(fast)), decode(t, apply(std)); !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("the two patches store different Deployments")
			}
		})
	}
}

// withoutNulls drops every null member of the JSON objects in v.
func withoutNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if e != nil {
				out[k] = withoutNulls(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = withoutNulls(e)
		}
		return out
	}
	return v
}

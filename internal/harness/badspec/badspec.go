// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package badspec reads the bad-spec corpus, mutate/testdata/badspec/violations.yaml:
// edits of a completed mgr Deployment, each breaking one rule of the policy
// (or none, at a rule's boundary). The policy's Go validation and the
// shipped ValidatingAdmissionPolicy are both judged on it.
package badspec

import (
	"encoding/json"
	"fmt"
	"os"

	jsonpatch "github.com/evanphx/json-patch/v5"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// Case is one entry of the corpus.
type Case struct {
	Name string `json:"name"`
	// Patch is an RFC 6902 JSON patch of the completed mgr.
	Patch []map[string]any `json:"patch"`
	// Policy is the MgrPolicy spec the case is judged by (empty: the
	// built-in policy), as the caller's PolicySpec reads it.
	Policy map[string]any `json:"policy,omitempty"`
	// Field, Type and Words describe the one error Go's validation gives;
	// no Field: the edit is admitted.
	Field string `json:"field,omitempty"`
	Type  string `json:"type,omitempty"`
	Words string `json:"words,omitempty"`
	// WebhookOnly says why the ValidatingAdmissionPolicy cannot judge this
	// rule (it admits; the webhook's judgement is the one that counts).
	WebhookOnly string `json:"webhookOnly,omitempty"`
}

// Load reads the corpus at path; every case has a name and a patch, and
// names are unique.
func Load(path string) ([]Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cases []Case
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if c.Name == "" || len(c.Patch) == 0 || seen[c.Name] {
			return nil, fmt.Errorf("%s: case %q needs a unique name and a patch", path, c.Name)
		}
		seen[c.Name] = true
	}
	return cases, nil
}

// Apply returns a copy of d with the case's patch applied.
func (c Case) Apply(d *appsv1.Deployment) (*appsv1.Deployment, error) {
	doc, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	ops, err := json.Marshal(c.Patch)
	if err != nil {
		return nil, err
	}
	p, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		return nil, fmt.Errorf("case %q: %w", c.Name, err)
	}
	out, err := p.Apply(doc)
	if err != nil {
		return nil, fmt.Errorf("case %q: %w", c.Name, err)
	}
	patched := &appsv1.Deployment{}
	return patched, json.Unmarshal(out, patched)
}

// PolicyJSON is the case's policy spec as JSON ({} for the built-in one).
func (c Case) PolicyJSON() []byte {
	if c.Policy == nil {
		return []byte("{}")
	}
	data, _ := json.Marshal(c.Policy) // decoded from YAML: always encodes
	return data
}

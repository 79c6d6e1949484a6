// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mgrctl

import (
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/inject"
)

// ResultsAPIVersion versions the documents -o yaml|json writes: a field is
// added within it, never renamed or removed (docs/mgrctl.md).
const ResultsAPIVersion = "mgrctl.mgr.ceph.rook.io/v1"

// Results is what inject, validate and diff write with -o yaml|json.
type Results struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"` // Results
	// Command is inject, validate or diff.
	Command string `json:"command"`
	// Policy names the policy judged by and its hash.
	Policy string   `json:"policy"`
	Items  []Result `json:"items"`
	// Diffs are diff's, one per source that would change.
	Diffs []SourceDiff `json:"diffs,omitempty"`
}

// Result is what became of one mgr document.
type Result struct {
	// Source is the file (- for stdin) and Document its place in it (1-based).
	Source    string `json:"source"`
	Document  int    `json:"document"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Verdict is admitted, refused or not-judged.
	Verdict string `json:"verdict"`
	// Reason says why a mgr is not judged.
	Reason   string   `json:"reason,omitempty"`
	Changed  []string `json:"changed,omitempty"`
	Denials  []Denial `json:"denials,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	Audits   []string `json:"audits,omitempty"`
}

// Denial is one field a refusal names.
type Denial struct {
	Field   string `json:"field"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

// SourceDiff is the unified diff of one source.
type SourceDiff struct {
	Source string `json:"source"`
	Diff   string `json:"diff"`
}

// The verdicts of a Result.
const (
	VerdictAdmitted  = "admitted"
	VerdictRefused   = "refused"
	VerdictNotJudged = "not-judged"
)

func resultOf(source string, d inject.Doc) Result {
	r := Result{Source: source, Document: d.Index + 1, Namespace: d.Namespace, Name: d.Name, Verdict: VerdictAdmitted,
		Reason: d.Skipped, Changed: d.Changed, Warnings: d.Warnings, Audits: d.Audits}
	switch {
	case d.Skipped != "":
		r.Verdict = VerdictNotJudged
	case len(d.Deny) > 0:
		r.Verdict = VerdictRefused
		r.Denials = denials(d.Deny)
	}
	return r
}

func denials(errs field.ErrorList) []Denial {
	out := make([]Denial, 0, len(errs))
	for _, e := range errs {
		out = append(out, Denial{Field: e.Field, Type: e.Type.String(), Message: e.Error()})
	}
	return out
}

// CheckResult is what check writes with -o yaml|json.
type CheckResult struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"` // CheckResult
	Namespace  string    `json:"namespace"`
	Name       string    `json:"name"`
	OK         bool      `json:"ok"`
	Findings   []Finding `json:"findings"`
}

// Finding is one check and its outcome.
type Finding struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// write writes v as format (yaml or json).
func write(w io.Writer, format string, v any) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	return usageError{fmt.Errorf("unknown output format %q: yaml or json", format)}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
)

// TestEnumerate: each rule kind yields its mutants, each changing exactly
// the token it names and leaving the file valid YAML.
func TestEnumerate(t *testing.T) {
	cases := map[string]struct {
		file string
		src  string
		want map[string]string // key suffix -> the mutated line, trimmed
	}{
		"webhook scope": {
			file: "w.yaml",
			src: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: w
webhooks:
  - name: scale
    failurePolicy: Fail
    namespaceSelector:
      matchExpressions:
        - key: kubernetes.io/metadata.name
          operator: NotIn
          values: ["kube-system"]
    matchConditions:
      - name: more-than-one
        expression: >-
          has(object.spec.replicas) && object.spec.replicas > 1 &&
          !object.metadata.name.startsWith('mgr-')
`,
			want: map[string]string{
				`.webhooks[0].failurePolicy: "Fail" -> "Ignore"`: `failurePolicy: Ignore`,
				`.webhooks[0].namespaceSelector.matchExpressions[0].key: "kubernetes.io/metadata.name" -> "kubernetes.io/metadata.name-x"`: `- key: kubernetes.io/metadata.name-x`,
				`.webhooks[0].namespaceSelector.matchExpressions[0].operator: "NotIn" -> "In"`:                                             `operator: In`,
				`.webhooks[0].namespaceSelector.matchExpressions[0].values[0]: "kube-system" -> "kube-system-x"`:                           `values: ["kube-system-x"]`,
				`.webhooks[0].matchConditions[0].expression: "&&" #1 -> "||"`:                                                              `has(object.spec.replicas) || object.spec.replicas > 1 &&`,
				`.webhooks[0].matchConditions[0].expression: "&&" #2 -> "||"`:                                                              `has(object.spec.replicas) && object.spec.replicas > 1 ||`,
				`.webhooks[0].matchConditions[0].expression: ">" #1 -> ">="`:                                                               `has(object.spec.replicas) && object.spec.replicas >= 1 &&`,
				`.webhooks[0].matchConditions[0].expression: 1 #1 -> 2`:                                                                    `has(object.spec.replicas) && object.spec.replicas > 2 &&`,
				`.webhooks[0].matchConditions[0].expression: 1 #1 -> 0`:                                                                    `has(object.spec.replicas) && object.spec.replicas > 0 &&`,
				`.webhooks[0].matchConditions[0].expression: "!" #1 -> ""`:                                                                 `object.metadata.name.startsWith('mgr-')`,
				`.webhooks[0].matchConditions[0].expression: "startsWith" #1 -> "endsWith"`:                                                `!object.metadata.name.endsWith('mgr-')`,
				`.webhooks[0].matchConditions[0].expression: literal #1 "mgr-" -> "mgr--x"`:                                                `!object.metadata.name.startsWith('mgr--x')`,
			},
		},
		"RBAC in a chart template": {
			file: "t.yaml",
			src: `{{- if .Values.x }}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: r
  namespace: {{ include "ns" $ }}
rules:
- apiGroups:
  - ""
  resourceNames:
  - a
  resources:
  - secrets
  verbs:
  - get
{{- else }}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: r
rules:
- apiGroups:
  - apps
  resources:
  - deployments
  verbs:
  - list
{{- end }}
`,
			want: map[string]string{
				`.rules[0].apiGroups[0]: "" -> "x"`:                        `- "x"`,
				`.rules[0].resourceNames[0]: "a" -> "a-x"`:                 `- a-x`,
				`.rules[0].resourceNames: removed`:                         `resources:`,
				`.rules[0].resources[0]: "secrets" -> "secrets-x"`:         `- secrets-x`,
				`.rules[0].verbs[0]: "get" -> "get-x"`:                     `- get-x`,
				`.rules[0].verbs[0]: "get" -> "*"`:                         `- "*"`,
				`.rules[0].verbs[0]: "list" -> "list-x"`:                   `- list-x`,
				`.rules[0].resources[0]: "deployments" -> "deployments-x"`: `- deployments-x`,
				`.rules[0].verbs[0]: "list" -> "*"`:                        `- "*"`,
				`.rules[0].apiGroups[0]: "apps" -> "apps-x"`:               `- apps-x`,
			},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ms, err := enumerate(c.file, []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			unique(ms)
			got := map[string]mutant{}
			for _, m := range ms {
				_, suffix, _ := strings.Cut(m.key, " ")
				_, suffix, _ = strings.Cut(suffix, " ")
				got[suffix] = m
			}
			for key, line := range c.want {
				m, ok := got[key]
				if !ok {
					t.Errorf("no mutant %s; have:\n%s", key, keys(got))
					continue
				}
				out := m.apply([]byte(c.src))
				lines := strings.Split(string(out), "\n")
				if m.line > len(lines) || strings.TrimSpace(lines[m.line-1]) != line {
					t.Errorf("%s: line %d reads %q, want %q", key, m.line, lines[min(m.line, len(lines))-1], line)
				}
				if err := parses(mask(out)); err != nil {
					t.Errorf("%s: the mutant is not YAML: %v", key, err)
				}
			}
			if len(got) != len(c.want) {
				t.Errorf("%d mutants, want %d:\n%s", len(got), len(c.want), keys(got))
			}
		})
	}
}

func keys(ms map[string]mutant) string {
	var b strings.Builder
	for k := range ms {
		b.WriteString("  " + k + "\n")
	}
	return b.String()
}

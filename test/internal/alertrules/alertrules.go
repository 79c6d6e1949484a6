// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package alertrules reads the shipped alerts (the monitoring component's
// PrometheusRule) with Prometheus's own rule parser, for the tests that
// evaluate them and that check the metrics they query.
package alertrules

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// File is the PrometheusRule, relative to the repository root.
var File = filepath.Join("manifests", "components", "monitoring", "prometheusrule.yaml")

// Load parses the PrometheusRule's groups strictly (unknown fields and
// invalid PromQL are errors) and returns its alerts by name.
func Load(root string) (map[string]rulefmt.Rule, error) {
	data, err := os.ReadFile(filepath.Join(root, File))
	if err != nil {
		return nil, err
	}
	var pr struct {
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &pr); err != nil {
		return nil, err
	}
	groups, err := yaml.Marshal(pr.Spec)
	if err != nil {
		return nil, err
	}
	rgs, errs := rulefmt.Parse(groups, false, model.UTF8Validation, parser.NewParser(parser.Options{}), nil)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	rules := map[string]rulefmt.Rule{}
	for _, g := range rgs.Groups {
		for _, r := range g.Rules {
			rules[r.Alert] = r
		}
	}
	return rules, nil
}

// Metrics are the metric names an expression selects.
func Metrics(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names, nil
}

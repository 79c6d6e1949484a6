// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Outcomes of an admission, the values of the "outcome" label.
const (
	OutcomeAllowed = "allowed" // admitted unchanged
	OutcomePatched = "patched" // admitted with a patch
	OutcomeSkipped = "skipped" // not a mgr Deployment, or an operation we ignore
	OutcomeDenied  = "denied"  // refused by policy
	OutcomeErrored = "errored" // malformed request
)

// Denial reasons beside field paths.
const (
	ReasonClusterMissing = "cluster-objects-missing"
	ReasonBadRequest     = "bad-request"
)

var (
	admissions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mgr_webhook_admissions_total",
		Help: "Admission requests handled, by webhook (mutate, validate) and outcome.",
	}, []string{"webhook", "outcome"})
	denials = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mgr_webhook_denials_total",
		Help: "Denied or errored admissions, by webhook and reason (the offending field with indices elided, or a named reason).",
	}, []string{"webhook", "reason"})
)

func init() {
	metrics.Registry.MustRegister(admissions, denials)
}

var indexRE = regexp.MustCompile(`\[[^\]]*\]`)

// reasonsOf turns field errors into bounded label values: indices and map keys
// other than label names are elided, so the label set stays small.
func reasonsOf(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, indexRE.ReplaceAllStringFunc(e.Field, func(s string) string {
			if s == "[mgr]" || s == "[app]" {
				return s
			}
			return "[*]"
		}))
	}
	return out
}

func count(webhook, outcome string, reasons ...string) {
	admissions.WithLabelValues(webhook, outcome).Inc()
	for _, r := range reasons {
		denials.WithLabelValues(webhook, r).Inc()
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rook-mgr/mgr-webhook/mutate"
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
	DenialClusterMissing = "cluster-objects-missing"
	DenialBadRequest     = "bad-request"
	// DenialOwnerUnverified: a CephCluster owner reference could not be
	// checked against the API server (the request is refused, not trusted).
	DenialOwnerUnverified = "owner-unverified"
	// DenialTooLarge and DenialOverloaded: refused by Bound before reading
	// or handling; DenialUnread: a small body not sent within its deadline.
	DenialTooLarge   = "too-large"
	DenialOverloaded = "overloaded"
	DenialUnread     = "body-not-sent"
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
	violations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mgr_webhook_policy_violations_total",
		Help: "Violations of the policy's rules whose action the policy chooses, by rule and action (Deny, Warn, Audit).",
	}, []string{"rule", "action"})
)

func init() {
	metrics.Registry.MustRegister(admissions, denials, violations)
	// Every webhook's series exist from the start, at 0: a rate() in an alert
	// or dashboard sees "none yet", not a metric that is not there.
	for _, w := range []string{mutateName, validateName, scaleName} {
		for _, o := range []string{OutcomeAllowed, OutcomePatched, OutcomeSkipped, OutcomeDenied, OutcomeErrored} {
			admissions.WithLabelValues(w, o)
		}
		denials.WithLabelValues(w, DenialClusterMissing)
		denials.WithLabelValues(w, DenialBadRequest)
		denials.WithLabelValues(w, DenialOwnerUnverified)
		denials.WithLabelValues(w, DenialTooLarge)
		denials.WithLabelValues(w, DenialOverloaded)
		denials.WithLabelValues(w, DenialUnread)
	}
	for _, r := range mutate.Rules {
		for _, a := range []mutate.Action{mutate.ActionDeny, mutate.ActionWarn, mutate.ActionAudit} {
			violations.WithLabelValues(string(r), string(a))
		}
	}
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

// ServingCertificateExpiry reports mgr_webhook_serving_certificate_expiry_timestamp_seconds,
// the NotAfter of the leaf certificate in certFile (what certwatcher serves),
// read at scrape time so it follows every renewal. An unreadable file gives
// no sample.
func ServingCertificateExpiry(certFile string) prometheus.Collector {
	return &certExpiry{file: certFile, desc: prometheus.NewDesc("mgr_webhook_serving_certificate_expiry_timestamp_seconds",
		"When the webhook's serving certificate expires (Unix time).", nil, nil)}
}

type certExpiry struct {
	file string
	desc *prometheus.Desc
}

func (c *certExpiry) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *certExpiry) Collect(ch chan<- prometheus.Metric) {
	data, err := os.ReadFile(c.file)
	if err != nil {
		return
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(cert.NotAfter.Unix()))
}

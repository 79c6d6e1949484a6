// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package policy

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The states of the MgrPolicy a replica watches.
const (
	stateCurrent = "current" // the newest generation is in force
	stateInvalid = "invalid" // the newest was refused; the last good one is in force
	stateMissing = "missing" // none exists; the last good (or the file's, or the built-in) is in force
)

var (
	policyState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mgr_policy_state",
		Help: "1 for the state of the watched MgrPolicy (current, invalid: refused and the last good kept, missing), per operation (webhook, controller).",
	}, []string{"operation", "state"})
	policyGeneration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mgr_policy_enforced_generation",
		Help: "The MgrPolicy generation in force (0: a policy file or the built-in one), per operation.",
	}, []string{"operation"})
	reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mgr_policy_reloads_total",
		Help: "MgrPolicy changes read, by result (applied, rejected), per operation.",
	}, []string{"operation", "result"})
)

func init() { metrics.Registry.MustRegister(policyState, policyGeneration, reloads) }

func recordState(operation, state string, enforced int64) {
	for _, s := range []string{stateCurrent, stateInvalid, stateMissing} {
		v := 0.0
		if s == state {
			v = 1
		}
		policyState.WithLabelValues(operation, s).Set(v)
	}
	policyGeneration.WithLabelValues(operation).Set(float64(enforced))
}

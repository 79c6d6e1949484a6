// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// phaseCollector reports mgr_bootstrap_mgrs{phase} from the manager's cache
// at scrape time: counted, never kept, so it cannot drift from the
// Deployments' status annotations. Only the leader reports, so that the
// replicas' series add up to the cluster's mgrs. A status the controller did
// not seal counts as Pending, whatever phase it claims: an editor who writes
// "Ready" over an Error does not silence the alert.
type phaseCollector struct {
	mu      sync.Mutex
	reader  client.Reader
	elected <-chan struct{}
	ready   func() bool // the status key is loaded
	sealed  func(*appsv1.Deployment, mgrstatus.Status) bool
	desc    *prometheus.Desc
}

var mgrPhases = &phaseCollector{desc: prometheus.NewDesc("mgr_bootstrap_mgrs",
	"Managed mgr Deployments by bootstrap phase (reported by the leader).", []string{"phase"}, nil)}

func init() { metrics.Registry.MustRegister(mgrPhases) }

// watch makes the collector count from reader once elected is closed,
// trusting the statuses sealed says the controller wrote; nothing is
// reported until ready (the status key loaded), rather than every mgr as
// Pending for a moment.
func (c *phaseCollector) watch(reader client.Reader, elected <-chan struct{}, ready func() bool, sealed func(*appsv1.Deployment, mgrstatus.Status) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reader, c.elected, c.ready, c.sealed = reader, elected, ready, sealed
}

func (c *phaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	reader, elected, ready, sealed := c.reader, c.elected, c.ready, c.sealed
	c.mu.Unlock()
	if reader == nil || !ready() {
		return
	}
	select {
	case <-elected:
	default:
		return
	}
	counts, err := countPhases(reader, sealed)
	if err != nil {
		return // a scrape during cache start-up: no sample rather than a wrong one
	}
	for _, p := range mgrstatus.AllPhases {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[p]), string(p))
	}
}

func countPhases(reader client.Reader, sealed func(*appsv1.Deployment, mgrstatus.Status) bool) (map[mgrstatus.Phase]int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &appsv1.DeploymentList{}
	if err := reader.List(ctx, list, client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
		return nil, err
	}
	counts := map[mgrstatus.Phase]int{}
	for i := range list.Items {
		d := &list.Items[i]
		if !contract.Managed(d) {
			continue
		}
		s, err := mgrstatus.Of(d)
		phase := s.Phase
		switch {
		case err != nil:
			phase = mgrstatus.PhaseError
		case phase == "" || !sealed(d, s):
			phase = mgrstatus.PhasePending
		}
		counts[phase]++
	}
	return counts, nil
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// CounterSum sums a counter of the controller-runtime registry (this
// process's components) over the series whose labels match.
func CounterSum(name string, match map[string]string) (float64, error) {
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return sumSeries(mf, match), nil
		}
	}
	return 0, nil
}

// ScrapeSum scrapes a metrics endpoint (another process's) and sums the
// counter, gauge or histogram (its sum of observations) name over the series
// whose labels match; 0 when absent.
func ScrapeSum(url, name string, match map[string]string) (float64, error) {
	mfs, err := Scrape(url)
	if err != nil {
		return 0, err
	}
	if mf, ok := mfs[name]; ok {
		return sumSeries(mf, match), nil
	}
	return 0, nil
}

// Scrape reads a plain-HTTP metrics endpoint, by metric family name.
func Scrape(url string) (map[string]*dto.MetricFamily, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", url, err)
	}
	return mfs, nil
}

func sumSeries(mf *dto.MetricFamily, match map[string]string) float64 {
	sum := 0.0
series:
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range match {
			if labels[k] != v {
				continue series
			}
		}
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetHistogram().GetSampleSum()
	}
	return sum
}

// MustMgrPodReady is MgrPodReady for a test: a failed read ends it.
func MustMgrPodReady(t testing.TB, cl client.Client, ns, id string) bool {
	t.Helper()
	ready, err := MgrPodReady(t.Context(), cl, ns, id)
	if err != nil {
		t.Fatal(err)
	}
	return ready
}

// MgrPodReady reports whether a live pod of mgr id in ns is Ready.
func MgrPodReady(ctx context.Context, cl client.Client, ns, id string) (bool, error) {
	pods := &corev1.PodList{}
	if err := cl.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"mgr": id}); err != nil {
		return false, err
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if p.DeletionTimestamp == nil && c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
	}
	return false, nil
}

// DeploymentEvents are the notes of the Events about Deployment
// namespace/name, by reason (the newest of each reason).
func DeploymentEvents(ctx context.Context, cl client.Client, namespace, name string) (map[string]string, error) {
	list := &eventsv1.EventList{}
	if err := cl.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	notes, at := map[string]string{}, map[string]time.Time{}
	for _, e := range list.Items {
		if e.Regarding.Kind == "Deployment" && e.Regarding.Name == name && !e.EventTime.Time.Before(at[e.Reason]) {
			notes[e.Reason], at[e.Reason] = e.Note, e.EventTime.Time
		}
	}
	return notes, nil
}

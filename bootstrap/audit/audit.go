// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package audit judges every managed mgr against the policy in force, on an
// interval and whenever the policy changes, and reports: one OpenReports
// Report per Ceph namespace, two gauges and an Event on a mgr whose result
// changed. It writes nothing else: drift is reported, never acted on. It is
// the controller's only user of mutate's judgement.
package audit

import (
	"context"
	"maps"
	"slices"
	"time"

	orv1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/policy"
)

// RBAC of the audit: its Reports, one per Ceph namespace, all named
// ReportName (a server-side apply that creates one needs create, which RBAC
// cannot narrow by name; the confinement policy refuses any other).
//
// +kubebuilder:rbac:groups=openreports.io,resources=reports,verbs=list;create
// +kubebuilder:rbac:groups=openreports.io,resources=reports,verbs=patch;delete,resourceNames=mgr-policy

var (
	auditMgrs = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mgr_policy_audit_mgrs",
		Help: "Managed mgr Deployments by their result against the policy in force (pass, warn, fail), at the last audit (the leader only).",
	}, []string{"result"})
	auditDrifted = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mgr_policy_audit_drifted_mgrs",
		Help: "Managed mgr Deployments that completing again under the policy in force would change, at the last audit (the leader only).",
	})
)

func init() { metrics.Registry.MustRegister(auditMgrs, auditDrifted) }

// ReasonPolicyAudit is the reason of the Events the audit records on a mgr.
const ReasonPolicyAudit = "PolicyAudit"

// Auditor audits the mgrs Client sees (the controller's cache) against
// Policy, every Interval and whenever Policy changes.
type Auditor struct {
	// Client reads the mgr Deployments (cached) and writes the Reports.
	Client client.Client
	// APIReader lists the Reports an earlier leader left (uncached).
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Policy    *policy.Store
	Interval  time.Duration
	// ReportLimit caps the results of a namespace's Report.
	ReportLimit int
	// ModuleOptionDrift, when set, is namespace ns's cluster's drifted
	// module options as last read (the controller's moduleOptions watch).
	ModuleOptionDrift func(ns string) []OptionDrift

	// last is each mgr's verdict at the previous audit; reports the hash of
	// each namespace's Report last written.
	last    map[types.UID]string
	reports map[string]string
	// noReports: the OpenReports API is not installed; said once.
	noReports bool
}

// NeedLeaderElection: the leader audits.
func (a *Auditor) NeedLeaderElection() bool { return true }

// Start audits until ctx ends.
func (a *Auditor) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("audit")
	changed := a.Policy.Subscribe()
	a.last, a.reports = map[types.UID]string{}, map[string]string{}
	a.removeStale(ctx)
	t := time.NewTicker(a.Interval)
	defer t.Stop()
	for {
		if err := a.audit(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "audit")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-changed:
		}
	}
}

// removeStale deletes the Reports of an earlier leader in namespaces that
// hold no managed mgr any more.
func (a *Auditor) removeStale(ctx context.Context) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(orv1alpha1.SchemeGroupVersion.WithKind("ReportList"))
	if err := a.APIReader.List(ctx, list, client.MatchingLabels{"app.kubernetes.io/managed-by": contract.ControllerName}); err != nil {
		return // no API, or no access: audit says so
	}
	mgrs, err := a.managed(ctx)
	if err != nil {
		return
	}
	for i := range list.Items {
		if rep := &list.Items[i]; rep.GetName() == ReportName && len(mgrs[rep.GetNamespace()]) == 0 {
			_ = a.Client.Delete(ctx, rep)
		}
	}
}

// managed lists the managed mgr Deployments from the cache, by namespace.
func (a *Auditor) managed(ctx context.Context) (map[string][]*appsv1.Deployment, error) {
	list := &appsv1.DeploymentList{}
	if err := a.Client.List(ctx, list, client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
		return nil, err
	}
	out := map[string][]*appsv1.Deployment{}
	for i := range list.Items {
		if d := &list.Items[i]; contract.Managed(d) && d.DeletionTimestamp == nil {
			out[d.Namespace] = append(out[d.Namespace], d)
		}
	}
	return out, nil
}

func (a *Auditor) audit(ctx context.Context) error {
	in := a.Policy.InForce()
	byNS, err := a.managed(ctx)
	if err != nil {
		return err
	}
	counts := map[orv1alpha1.Result]int{"pass": 0, "warn": 0, "fail": 0}
	drifted := 0
	seen := map[types.UID]bool{}
	for _, ns := range slices.Sorted(maps.Keys(byNS)) {
		var found []audited
		for _, d := range byNS[ns] {
			au := audited{d: d, f: mutate.Audit(d, in.Policy)}
			found = append(found, au)
			result, why := au.verdict(in.Policy)
			counts[result]++
			if au.f.Drift != 0 {
				drifted++
			}
			seen[d.UID] = true
			a.event(d, result, why)
		}
		var drift []OptionDrift
		if a.ModuleOptionDrift != nil {
			drift = a.ModuleOptionDrift(ns)
		}
		rep, hash := reportFor(ns, found, drift, in.Policy, in.Hash, a.ReportLimit)
		if a.reports[ns] == hash {
			continue
		}
		if err := a.write(ctx, rep); err != nil {
			return err
		}
		a.reports[ns] = hash
	}
	for ns := range a.reports {
		if len(byNS[ns]) > 0 {
			continue
		}
		rep := &unstructured.Unstructured{}
		rep.SetGroupVersionKind(orv1alpha1.SchemeGroupVersion.WithKind("Report"))
		rep.SetNamespace(ns)
		rep.SetName(ReportName)
		if err := a.Client.Delete(ctx, rep); client.IgnoreNotFound(err) != nil {
			return err
		}
		delete(a.reports, ns)
	}
	for uid := range a.last {
		if !seen[uid] {
			delete(a.last, uid)
		}
	}
	for result, n := range counts {
		auditMgrs.WithLabelValues(string(result)).Set(float64(n))
	}
	auditDrifted.Set(float64(drifted))
	return nil
}

// event says on the mgr when its verdict changed (and on first sight, when
// it is not a pass).
func (a *Auditor) event(d *appsv1.Deployment, result orv1alpha1.Result, why string) {
	now := string(result) + ": " + why
	prev, known := a.last[d.UID]
	a.last[d.UID] = now
	if prev == now || (!known && result == "pass") {
		return
	}
	if result == "pass" {
		a.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonPolicyAudit, "Audit", "complies with the policy in force")
		return
	}
	a.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonPolicyAudit, "Audit", "%s against the policy in force: %s (see Report %s)", result, why, ReportName)
}

// write applies the Report (server-side, this controller's field manager).
func (a *Auditor) write(ctx context.Context, rep *orv1alpha1.Report) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rep)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: obj}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	err = a.Client.Patch(ctx, u, client.Apply, client.FieldOwner(contract.ControllerName), client.ForceOwnership)
	if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
		if !a.noReports {
			a.noReports = true
			ctrl.LoggerFrom(ctx).Info("the OpenReports API (reports.openreports.io) is not installed: the audit reports by gauge and Event only")
		}
		return nil
	}
	return err
}

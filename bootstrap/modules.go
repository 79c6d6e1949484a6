// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// wanted is what a Ready status covers: the modules it found on plus those the
// release lacks, sorted.
func (s Status) wanted() []string {
	return sortedCopy(append(append([]string(nil), s.Modules...), s.Unavailable...))
}

// portsSet reports whether the status records the mgr container's module
// ports as set in Ceph, for the modules it runs (a status of an earlier
// version records none: its second mgrs get their ports once).
func (s Status) portsSet(d *appsv1.Deployment) bool {
	return (!slices.Contains(s.Modules, "prometheus") || s.MetricsPort == containerPort(d, contract.PortNameMetrics, contract.PortMetrics)) &&
		(!slices.Contains(s.Modules, "dashboard") || s.DashboardPort == containerPort(d, contract.PortNameDash, contract.PortDashboard))
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return slices.Compact(c)
}

// enableModules reads the release the mgr runs, plans the module commands for its
// release (planModules) and runs them in order; what the plan leaves out
// becomes a Warning Event, once.
func (b *scope) enableModules(ctx context.Context, conn ceph.Conn, mgrMap ceph.MgrMap, want []string, prev Status, next *Status) error {
	r, d := b.r, b.d
	md, err := r.Ceph.MgrMetadata(ctx, conn, b.id)
	if err != nil {
		return err
	}
	rel, err := ceph.ParseVersion(md.CephVersion)
	if err != nil {
		return fmt.Errorf("mgr %s's release: %w", b.id, err)
	}
	plan := planModules(moduleInputs{
		Release: rel, MgrID: b.id, Want: want, Modules: mgrMap.Modules(rel), Prev: prev, Backend: r.OrchestratorBackend,
		MetricsPort:   containerPort(d, contract.PortNameMetrics, contract.PortMetrics),
		DashboardPort: containerPort(d, contract.PortNameDash, contract.PortDashboard),
	})
	next.CephVersion = rel.String()
	next.Modules, next.Unavailable = plan.Modules, plan.Unavailable
	for _, s := range plan.Skipped {
		if s.Login || !slices.Contains(prev.Unavailable, s.Module) {
			r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonModuleUnavailable, "EnableModule", "mgr module %s skipped: %s", s.Module, s.Why)
		}
	}
	var password []byte
	for _, s := range plan.Steps {
		if s.Password && password == nil {
			if password, err = r.dashboardPassword(ctx, d); err != nil {
				return err
			}
		}
		if err := b.runStep(ctx, conn, s, password); err != nil {
			return err
		}
	}
	next.Backend, next.Dashboard = plan.Backend, plan.Dashboard
	next.MetricsPort, next.DashboardPort = plan.MetricsPort, plan.DashboardPort
	if len(plan.Disabled) > 0 {
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonModulesDisabled, "DisableModule", "mgr modules disabled, no longer in the cluster's set: %v", plan.Disabled)
	}
	if len(plan.Enabled) > 0 {
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonModulesEnabled, "EnableModule", "mgr modules enabled: %v", plan.Enabled)
	}
	if plan.Dashboard && !prev.Dashboard {
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonDashboardReady, "ConfigureDashboard",
			"dashboard on https port %d; user %q, password in Secret %s", containerPort(d, contract.PortNameDash, contract.PortDashboard),
			contract.DashboardUser, contract.DashboardPasswordSecretName)
	}
	return nil
}

// runStep runs one planned command: not at all when its Unless read
// succeeds, the OnNotFound command when it answers ENOENT, with retries when
// it may meet a restarting mgr.
func (b *scope) runStep(ctx context.Context, conn ceph.Conn, s step, password []byte) error {
	r := b.r
	if s.Unless != nil {
		_, err := r.Ceph.Run(ctx, conn, *s.Unless)
		if err == nil {
			return nil
		}
		if !ceph.IsNotFound(err) {
			return err
		}
	}
	do := func(ctx context.Context) error {
		c := s.Cmd
		if s.Password {
			c.Stdin = password
		}
		_, err := r.Ceph.Run(ctx, conn, c)
		if ceph.IsNotFound(err) && s.OnNotFound != nil {
			c = *s.OnNotFound
			if s.Password {
				c.Stdin = password
			}
			_, err = r.Ceph.Run(ctx, conn, c)
		}
		return err
	}
	var err error
	if s.Retry {
		err = b.retry(ctx, do)
	} else {
		err = do(ctx)
	}
	if err != nil {
		return fmt.Errorf("ceph %s: %w", strings.Join(s.Cmd.Args, " "), err)
	}
	return nil
}

// retry repeats a step while the mgr restarts (a module's commands not loaded
// yet, EBUSY, EAGAIN, no answer), with backoff, under ModuleTimeout (Rook's
// ExecuteCephCommandWithRetry). Any other answer ends it at once.
func (b *scope) retry(ctx context.Context, step func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, b.r.ModuleTimeout)
	defer cancel()
	var last error
	backoff := wait.Backoff{Duration: b.r.RetryInterval, Factor: 1.5, Jitter: 0.2, Steps: 1 << 20, Cap: 15 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		last = step(ctx)
		if last == nil {
			return true, nil
		}
		if ceph.IsRetryable(last) {
			return false, nil
		}
		return false, last
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// lockCluster serializes the module runs of namespace ns. It gives up when
// ctx ends: a worker never waits out another mgr's module retries.
func (r *Reconciler) lockCluster(ctx context.Context, ns string) (unlock func(), err error) {
	v, _ := r.clusterLocks.LoadOrStore(ns, make(chan struct{}, 1))
	held := v.(chan struct{})
	select {
	case held <- struct{}{}:
		return func() { <-held }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

package bootstrap

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

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

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return slices.Compact(c)
}

// enableModules turns on the wanted modules this release has and can run,
// never toggling one already on; modules it lacks become a Warning Event.
func (b *scope) enableModules(ctx context.Context, conn ceph.Conn, want []string, prev Status, next *Status) error {
	r, d := b.r, b.d
	mods, err := r.Ceph.MgrModules(ctx, conn)
	if err != nil {
		return err
	}
	on := map[string]bool{}
	for _, m := range append(slices.Clone(mods.AlwaysOn), mods.Enabled...) {
		on[m] = true
	}
	canRun := map[string]string{} // name -> why not ("" when it can)
	for _, m := range mods.Disabled {
		canRun[m.Name] = ""
		if !m.CanRun {
			canRun[m.Name] = "cannot run: " + m.ErrorString
		}
	}
	// Module options first: a module started with its ports set needs no restart.
	if slices.Contains(want, "prometheus") && !on["prometheus"] {
		port := containerPort(d, contract.PortNameMetrics, contract.PortMetrics)
		if err := r.Ceph.ConfigSet(ctx, conn, "mgr."+b.id, "mgr/prometheus/server_port", strconv.Itoa(int(port))); err != nil {
			return err
		}
	}
	dashboardPort := containerPort(d, contract.PortNameDash, contract.PortDashboard)
	if slices.Contains(want, "dashboard") && !on["dashboard"] {
		for _, kv := range [][2]string{{"mgr/dashboard/ssl", "true"}, {"mgr/dashboard/ssl_server_port", strconv.Itoa(int(dashboardPort))}} {
			if err := r.Ceph.ConfigSet(ctx, conn, "mgr."+b.id, kv[0], kv[1]); err != nil {
				return err
			}
		}
	}

	next.Modules, next.Unavailable = nil, nil
	var enabled []string
	for _, m := range want {
		name := m
		if alias, ok := moduleAliases[m]; ok && !on[m] {
			if _, has := canRun[m]; !has && on[alias] {
				name = alias // the successor is always on
			}
		}
		if on[name] {
			next.Modules = append(next.Modules, m)
			continue
		}
		why, known := canRun[name]
		if !known || why != "" {
			if !known {
				why = "this Ceph release has no such module"
			}
			next.Unavailable = append(next.Unavailable, m)
			if !slices.Contains(prev.Unavailable, m) {
				r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonModuleUnavailable, "EnableModule", "mgr module %s skipped: %s", m, why)
			}
			continue
		}
		// Enabling restarts the mgr: retry what a restarting mgr answers.
		if err := b.retry(ctx, func(ctx context.Context) error { return r.Ceph.EnableModule(ctx, conn, name) }); err != nil {
			return fmt.Errorf("enabling mgr module %s: %w", name, err)
		}
		on[name] = true
		enabled = append(enabled, m)
		next.Modules = append(next.Modules, m)
	}
	if r.OrchestratorBackend != "" && slices.Contains(enabled, r.OrchestratorBackend) {
		if err := b.retry(ctx, func(ctx context.Context) error {
			return r.Ceph.SetOrchestratorBackend(ctx, conn, r.OrchestratorBackend)
		}); err != nil {
			return fmt.Errorf("setting the orchestrator backend: %w", err)
		}
	}
	if len(enabled) > 0 {
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonModulesEnabled, "EnableModule", "mgr modules enabled: %v", enabled)
	}
	next.Dashboard = prev.Dashboard && on["dashboard"]
	if on["dashboard"] && slices.Contains(want, "dashboard") && !next.Dashboard {
		if err := b.configureDashboard(ctx, conn, dashboardPort); err != nil {
			return fmt.Errorf("configuring the dashboard: %w", err)
		}
		next.Dashboard = true
	}
	return nil
}

// retry repeats a step while the mgr restarts (EINVAL, EBUSY, EAGAIN, no
// answer), with backoff, under ModuleTimeout (Rook's ExecuteCephCommandWithRetry).
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

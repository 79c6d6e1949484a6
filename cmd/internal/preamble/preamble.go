// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package preamble is what each long-running command does before its own
// work: the flags every one has (--version and the zap logging flags), one
// JSON logger for controller-runtime and klog, the start line and the
// version metric.
package preamble

import (
	"flag"
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rook-mgr/mgr-webhook/version"
)

// Flags are the flags every command shares.
type Flags struct {
	zap     zap.Options
	version bool
}

// BindFlags registers them on fs.
func (f *Flags) BindFlags(fs *flag.FlagSet) {
	f.zap.BindFlags(fs)
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
}

// Start runs the preamble of command name once its flags are parsed: with
// --version it prints the version to out and reports false (exit). Otherwise
// it sets the logger of controller-runtime and of klog (client-go and leader
// election: the same JSON lines), logs the start line, registers the
// version metric and the collectors given, and reports true.
func (f *Flags) Start(name string, out io.Writer, collectors ...prometheus.Collector) bool {
	build := version.Get()
	if f.version {
		fmt.Fprintln(out, build.String(name))
		return false
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap)))
	klog.SetLogger(ctrl.Log.WithName("klog"))
	ctrl.Log.Info(name, "version", build.Version, "revision", build.Revision, "go", build.GoVersion)
	metrics.Registry.MustRegister(append([]prometheus.Collector{version.Collector(name)}, collectors...)...)
	return true
}

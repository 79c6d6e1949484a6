// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package version is what a binary says it is: --version, the first log
// line and the build_info metric. Version is set at build time by the
// Makefile and the Dockerfile (-ldflags "-X
// github.com/rook-mgr/mgr-webhook/version.Version=$(git describe)", and
// Revision); a plain `go build` reports "devel".
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Version and Revision are set by -ldflags; empty in a plain build, where
// the revision comes from the VCS stamp Go adds (unless -buildvcs=false).
var (
	Version  = ""
	Revision = ""
)

// Info is one binary's build.
type Info struct {
	Version, Revision, GoVersion string
}

// Get reads the build: Version when set, else "devel" with the revision.
func Get() Info {
	i := Info{Version: Version, Revision: Revision, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok && i.Revision == "" {
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Revision = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty && i.Revision != "" {
			i.Revision += "-dirty"
		}
	}
	if i.Version == "" {
		i.Version = "devel"
	}
	return i
}

// String is what --version prints, e.g. "mgr-webhook v0.2.0 (revision 1a2b3c..., go1.26.8)".
func (i Info) String(binary string) string {
	rev := i.Revision
	if rev == "" {
		rev = "unknown"
	}
	return fmt.Sprintf("%s %s (revision %s, %s)", binary, i.Version, rev, i.GoVersion)
}

// Collector is the mgr_webhook_build_info gauge: 1, labelled with the
// component and its build, as Prometheus exporters report their version.
func Collector(component string) prometheus.Collector {
	i := Get()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mgr_webhook_build_info",
		Help: "The build of this component: always 1, labelled with its version, VCS revision and Go version.",
	}, []string{"component", "version", "revision", "goversion"})
	g.WithLabelValues(component, i.Version, i.Revision, i.GoVersion).Set(1)
	return g
}

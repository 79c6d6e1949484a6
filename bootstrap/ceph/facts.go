// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package ceph

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"
)

// Facts are what the release guard judges a mgr's release change by: the
// release floors the mons and OSDs hold, the cluster's health, its standby
// mgrs, and the releases its mons and mgrs run.
type Facts struct {
	// RequireOSDRelease is the oldest release an OSD may run ("pacific").
	RequireOSDRelease string
	// MinMonRelease is the oldest release a mon runs, by name.
	MinMonRelease string
	// Health is HEALTH_OK, HEALTH_WARN or HEALTH_ERR.
	Health string
	// Standbys is the number of standby mgrs.
	Standbys int
	// Mons and Mgrs are the releases the daemons run, oldest first.
	Mons, Mgrs []Version
	// FailedModules are the mgr modules that failed on the active mgr
	// (health check MGR_MODULE_ERROR), each with Ceph's error.
	FailedModules map[string]string
	// InsecureKeys are the service entities whose cephx key is of an
	// insecure type (health check AUTH_INSECURE_SERVICE_KEY_TYPE, Tentacle
	// 20.2.4 and Squid 19.2.6 on), sorted.
	InsecureKeys []string
}

// ModuleErrorCheck is the health check the active mgr raises while a module
// of its has failed; Ceph leaves the module failed until that mgr restarts.
const ModuleErrorCheck = "MGR_MODULE_ERROR"

// InsecureKeyCheck is the health check (HEALTH_ERR) Ceph raises while a
// service entity (a mon, mgr, OSD or MDS) holds a key of an insecure type;
// each detail names one: "entity mgr.a using insecure key type: aes".
const InsecureKeyCheck = "AUTH_INSECURE_SERVICE_KEY_TYPE"

// status is the part of `ceph status` Facts reads.
type status struct {
	Health health `json:"health"`
	MonMap struct {
		MinMonRelease string `json:"min_mon_release_name"`
	} `json:"monmap"`
	MgrMap struct {
		Standbys int `json:"num_standbys"`
	} `json:"mgrmap"`
}

// health is `ceph health detail`, and the part of `ceph status` that says
// the same without the details.
type health struct {
	Status string `json:"status"`
	Checks map[string]struct {
		Summary struct {
			Message string `json:"message"`
		} `json:"summary"`
		Detail []struct {
			Message string `json:"message"`
		} `json:"detail"`
	} `json:"checks"`
}

// failedModules reads "Module 'NAME' has failed: ERROR", as Ceph words each
// failed module of MGR_MODULE_ERROR, from the check's details, or from its
// summary when there is one module (`ceph status` gives no details).
func (h health) failedModules() map[string]string {
	c, ok := h.Checks[ModuleErrorCheck]
	if !ok {
		return nil
	}
	lines := []string{c.Summary.Message}
	for _, d := range c.Detail {
		lines = append(lines, d.Message)
	}
	out := map[string]string{}
	for _, l := range lines {
		rest, ok := strings.CutPrefix(l, "Module '")
		if !ok {
			continue
		}
		if name, msg, ok := strings.Cut(rest, "' has failed: "); ok {
			out[name] = msg
		} else if name, ok := strings.CutSuffix(rest, "' has failed"); ok {
			out[name] = ""
		}
	}
	return out
}

// insecureKeys reads the entities of InsecureKeyCheck's details, sorted.
func (h health) insecureKeys() []string {
	var out []string
	for _, d := range h.Checks[InsecureKeyCheck].Detail {
		rest, ok := strings.CutPrefix(d.Message, "entity ")
		if !ok {
			continue
		}
		if entity, _, ok := strings.Cut(rest, " using insecure key type"); ok && !slices.Contains(out, entity) {
			out = append(out, entity)
		}
	}
	slices.Sort(out)
	return out
}

// Facts reads the cluster's facts in three reads, `ceph status`, `ceph osd
// dump` (require_osd_release) and `ceph versions`: over the Monitor's kept
// connection, three mon round trips; and `ceph health detail` by the CLI
// while a mgr module has failed or a service key is of an insecure type, to
// name each.
func (r *Runner) Facts(ctx context.Context, conn Conn) (Facts, error) {
	var f Facts
	var st status
	if err := r.readJSON(ctx, conn, "status", &st, "status"); err != nil {
		return f, err
	}
	var osd struct {
		RequireOSDRelease string `json:"require_osd_release"`
	}
	if err := r.readJSON(ctx, conn, "osd dump", &osd, "osd", "dump"); err != nil {
		return f, err
	}
	var versions map[string]map[string]int // daemon type -> banner -> count
	if err := r.readJSON(ctx, conn, "versions", &versions, "versions"); err != nil {
		return f, err
	}
	f.Health, f.MinMonRelease, f.Standbys = st.Health.Status, st.MonMap.MinMonRelease, st.MgrMap.Standbys
	f.RequireOSDRelease = osd.RequireOSDRelease
	f.Mons, f.Mgrs = releases(versions["mon"]), releases(versions["mgr"])
	_, failed := st.Health.Checks[ModuleErrorCheck]
	_, insecure := st.Health.Checks[InsecureKeyCheck]
	if failed || insecure {
		var detail health
		out, err := r.Run(ctx, conn, Command{Name: "health detail", Kind: Read, Args: []string{"health", "detail"}})
		if err != nil {
			return f, err
		}
		if err := json.Unmarshal(out, &detail); err != nil {
			return f, &Error{Command: "health detail", Message: "unexpected output: " + err.Error()}
		}
		f.FailedModules, f.InsecureKeys = detail.failedModules(), detail.insecureKeys()
	}
	return f, nil
}

// releases are the releases of banners, each once, oldest first; a banner
// that names no release is left out.
func releases(banners map[string]int) []Version {
	var out []Version
	for b := range banners {
		if v, err := ParseVersion(b); err == nil && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, Version.Compare)
	return out
}

// Cut is s, text Ceph wrote, in at most n bytes, cut at a character's
// start: to fit a bounded Kubernetes field.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// readJSON runs the read-only command name (args: its words) and decodes
// its JSON answer into v: over the Monitor's kept connection when there is
// one, else by the CLI.
func (r *Runner) readJSON(ctx context.Context, conn Conn, name string, v any, args ...string) error {
	if r.Monitor != nil {
		if err := r.Monitor.Read(ctx, conn, name, v); !errors.Is(err, ErrNoMonitor) {
			return err
		}
	}
	out, err := r.Run(ctx, conn, Command{Name: name, Kind: Read, Args: args})
	if err != nil {
		return err
	}
	if err := json.Unmarshal(out, v); err != nil {
		return &Error{Command: name, Message: "unexpected output: " + err.Error()}
	}
	return nil
}

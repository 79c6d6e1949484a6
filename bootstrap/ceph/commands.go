// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package ceph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// The commands the bootstrap controller uses, each with its metric name.

// Commander runs one command: a Runner, or cluster.Cache's guarded ceph.
type Commander interface {
	Run(ctx context.Context, conn Conn, c Command) ([]byte, error)
}

// ConfigKey is the value of key in the cluster's config-key store, where
// the controller keeps what it must remember of a cluster (admin-written,
// so no namespace editor writes it); "" when key is not set.
func ConfigKey(ctx context.Context, r Commander, conn Conn, key string) (string, error) {
	out, err := r.Run(ctx, conn, Command{Name: "config-key get", Kind: Read, Args: []string{"config-key", "get", key}})
	if IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.Trim(strings.TrimSpace(string(out)), `"`), nil
}

// ModulesRecord is the list of modules the controller turned on itself
// (contract.ModulesRecordKey); none yet is an empty record.
func ModulesRecord(ctx context.Context, r Commander, conn Conn) ([]string, error) {
	v, err := ConfigKey(ctx, r, conn, contract.ModulesRecordKey)
	if err != nil {
		return nil, fmt.Errorf("reading the modules this controller turned on: %w", err)
	}
	return contract.SplitList(v), nil
}

// ModuleOptionsRecord is the list of module options the controller set
// itself (contract.ModuleOptionsRecordKey); none yet is an empty record.
func ModuleOptionsRecord(ctx context.Context, r Commander, conn Conn) ([]string, error) {
	v, err := ConfigKey(ctx, r, conn, contract.ModuleOptionsRecordKey)
	if err != nil {
		return nil, fmt.Errorf("reading the module options this controller set: %w", err)
	}
	return contract.SplitList(v), nil
}

// configEntry is one entry of `ceph config dump`.
type configEntry struct {
	Section string `json:"section"`
	Name    string `json:"name"`
	Value   string `json:"value"`
}

// ConfigSection is what the cluster's configuration database holds for
// section (e.g. "mgr"), by option name: one read of `config dump`.
func ConfigSection(ctx context.Context, r Commander, conn Conn, section string) (map[string]string, error) {
	out, err := r.Run(ctx, conn, Command{Name: "config dump", Kind: Read, Args: []string{"config", "dump"}})
	if err != nil {
		return nil, err
	}
	var entries []configEntry
	if err := json.Unmarshal(out, &entries); err != nil {
		return nil, &Error{Command: "config dump", Message: "unexpected output: " + err.Error()}
	}
	values := map[string]string{}
	for _, e := range entries {
		if e.Section == section {
			values[e.Name] = e.Value
		}
	}
	return values, nil
}

// SetConfigKey sets key in the cluster's config-key store to value.
func SetConfigKey(ctx context.Context, r Commander, conn Conn, key, value string) error {
	_, err := r.Run(ctx, conn, Command{Name: "config-key set", Kind: Write, Args: []string{"config-key", "set", key, value}})
	return err
}

// GetOrCreateKey returns the cephx key of entity, creating it with caps.
// EINVAL means the entity exists with other caps.
func (r *Runner) GetOrCreateKey(ctx context.Context, conn Conn, entity string, caps []string) (string, error) {
	out, err := r.Run(ctx, conn, Command{Name: "auth get-or-create-key", Kind: Write,
		Args: append([]string{"auth", "get-or-create-key", entity}, caps...)})
	if err != nil {
		return "", err
	}
	return parseKey("auth get-or-create-key", out)
}

// GetKey returns the cephx key of entity.
func (r *Runner) GetKey(ctx context.Context, conn Conn, entity string) (string, error) {
	out, err := r.Run(ctx, conn, Command{Name: "auth get-key", Kind: Read, Args: []string{"auth", "get-key", entity}})
	if err != nil {
		return "", err
	}
	return parseKey("auth get-key", out)
}

func parseKey(cmd string, out []byte) (string, error) {
	var k struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(out, &k); err != nil || k.Key == "" {
		return "", &Error{Command: cmd, Message: "unexpected output (no key)"}
	}
	return k.Key, nil
}

// RotateKey gives entity a new key (`ceph auth rotate`, Squid 19.2.3 and
// later) of keyType ("" for the mons' preferred type) and returns it; the
// old key stops working for new sessions at once.
func (r *Runner) RotateKey(ctx context.Context, conn Conn, entity, keyType string) (string, error) {
	args := []string{"auth", "rotate", entity}
	if keyType != "" {
		args = append(args, "--key_type", keyType)
	}
	out, err := r.Run(ctx, conn, Command{Name: "auth rotate", Kind: Write, Args: args})
	if err != nil {
		return "", err
	}
	// [{"entity":..., "key":..., "caps":{...}}]: the key read and nothing else kept.
	var entries []struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(out, &entries); err != nil || len(entries) != 1 || entries[0].Key == "" {
		return "", &Error{Command: "auth rotate", Message: "unexpected output (no key)"}
	}
	return entries[0].Key, nil
}

// SetCaps replaces the caps of entity.
func (r *Runner) SetCaps(ctx context.Context, conn Conn, entity string, caps []string) error {
	_, err := r.Run(ctx, conn, Command{Name: "auth caps", Kind: Write, Args: append([]string{"auth", "caps", entity}, caps...)})
	return err
}

// RemoveKey deletes entity; a missing entity is not an error.
func (r *Runner) RemoveKey(ctx context.Context, conn Conn, entity string) error {
	_, err := r.Run(ctx, conn, Command{Name: "auth rm", Kind: Write, Args: []string{"auth", "rm", entity}})
	if IsNotFound(err) {
		return nil
	}
	return err
}

// MgrMap is the part of `ceph mgr dump` the controller reads: who is active
// and standing by, and the modules (what the active mgr has, what is enabled,
// and what each release keeps always on).
type MgrMap struct {
	Available  bool   `json:"available"`
	ActiveName string `json:"active_name"`
	// ActiveGID tells one run of the active daemon from the next.
	ActiveGID uint64 `json:"active_gid"`
	Standbys  []struct {
		Name string `json:"name"`
	} `json:"standbys"`
	Enabled          []string            `json:"modules"`
	AvailableModules []ModuleInfo        `json:"available_modules"`
	AlwaysOn         map[string][]string `json:"always_on_modules"`
}

// Knows reports whether mgr id is the active mgr or a standby.
func (m MgrMap) Knows(id string) bool {
	if m.ActiveName == id {
		return true
	}
	for _, s := range m.Standbys {
		if s.Name == id {
			return true
		}
	}
	return false
}

// Forget drops what the runner keeps for cluster (the Monitor's connection).
func (r *Runner) Forget(cluster string) {
	if r.Monitor != nil {
		r.Monitor.Forget(cluster)
	}
}

// MgrDump reads the mgr map.
func (r *Runner) MgrDump(ctx context.Context, conn Conn) (MgrMap, error) {
	var m MgrMap
	out, err := r.Run(ctx, conn, Command{Name: "mgr dump", Kind: Read, Args: []string{"mgr", "dump"}})
	if err == nil {
		if err = json.Unmarshal(out, &m); err != nil {
			err = &Error{Command: "mgr dump", Message: "unexpected output: " + err.Error()}
		}
	}
	return m, err
}

// MgrStat is what `ceph mgr stat` answers: the mgr map's summary.
type MgrStat struct {
	Available  bool   `json:"available"`
	ActiveName string `json:"active_name"`
}

// MgrStat reads which mgr is active: the cheapest look at the mgr map, over
// the Monitor's kept connection when there is one, else by the CLI.
func (r *Runner) MgrStat(ctx context.Context, conn Conn) (MgrStat, error) {
	if r.Monitor != nil {
		st, err := r.Monitor.MgrStat(ctx, conn)
		if !errors.Is(err, ErrNoMonitor) {
			return st, err
		}
	}
	var m MgrStat
	out, err := r.Run(ctx, conn, Command{Name: "mgr stat", Kind: Read, Args: []string{"mgr", "stat"}})
	if err == nil {
		if err = json.Unmarshal(out, &m); err != nil {
			err = &Error{Command: "mgr stat", Message: "unexpected output: " + err.Error()}
		}
	}
	return m, err
}

// Modules is what `ceph mgr module ls` answers: what a release always runs,
// what is enabled, and what the active mgr has and does not run.
type Modules struct {
	AlwaysOn []string     `json:"always_on_modules"`
	Enabled  []string     `json:"enabled_modules"`
	Disabled []ModuleInfo `json:"disabled_modules"`
}

// ModuleInfo is a module the active mgr has, and whether it can run.
type ModuleInfo struct {
	Name        string `json:"name"`
	CanRun      bool   `json:"can_run"`
	ErrorString string `json:"error_string"`
}

// UnmarshalJSON reads both forms: an object (Mimic on), or a bare name
// (Luminous, which does not say whether the module can run).
func (m *ModuleInfo) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		*m = ModuleInfo{Name: name, CanRun: true}
		return nil
	}
	type plain ModuleInfo
	return json.Unmarshal(b, (*plain)(m))
}

// Modules is `ceph mgr module ls` computed from the map for a mgr of release
// rel, as that mgr sees it: it runs the always-on modules of its own release
// (the newest listed for an unnamed one), so one `mgr dump` answers both who
// is active and which modules are on.
func (m MgrMap) Modules(rel Version) Modules {
	var always []string
	if name, ok := contract.ReleaseNames[rel.Major]; ok {
		always = m.AlwaysOn[name]
	} else {
		best := 0
		for major, name := range contract.ReleaseNames {
			if _, listed := m.AlwaysOn[name]; listed && major <= rel.Major && major > best {
				best, always = major, m.AlwaysOn[name]
			}
		}
	}
	mods := Modules{AlwaysOn: slices.Clone(always), Enabled: slices.Clone(m.Enabled)}
	for _, info := range m.AvailableModules {
		if !slices.Contains(always, info.Name) && !slices.Contains(m.Enabled, info.Name) {
			mods.Disabled = append(mods.Disabled, info)
		}
	}
	return mods
}

// MgrMetadata is the part of `ceph mgr metadata <id>` the controller reads.
type MgrMetadata struct {
	// CephVersion is the daemon's own banner, e.g. "ceph version 16.2.15
	// (618f4408...) pacific (stable)"; every release since Luminous reports it.
	CephVersion string `json:"ceph_version"`
}

// MgrMetadata reads what mgr id reported about itself; ENOENT while it has
// not registered.
func (r *Runner) MgrMetadata(ctx context.Context, conn Conn, id string) (MgrMetadata, error) {
	var m MgrMetadata
	out, err := r.Run(ctx, conn, Command{Name: "mgr metadata", Kind: Read, Args: []string{"mgr", "metadata", id}})
	if err == nil {
		if err = json.Unmarshal(out, &m); err != nil {
			err = &Error{Command: "mgr metadata", Message: "unexpected output: " + err.Error()}
		}
	}
	return m, err
}

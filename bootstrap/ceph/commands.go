package ceph

import (
	"context"
	"encoding/json"
)

// The commands the bootstrap controller uses, each with its metric name.

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

// MgrMap is the part of `ceph mgr dump` the controller reads.
type MgrMap struct {
	Available  bool   `json:"available"`
	ActiveName string `json:"active_name"`
	Standbys   []struct {
		Name string `json:"name"`
	} `json:"standbys"`
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

// Modules is `ceph mgr module ls`: what this release has, runs and always
// runs. Releases before Nautilus have no always-on modules.
type Modules struct {
	AlwaysOn []string         `json:"always_on_modules"`
	Enabled  []string         `json:"enabled_modules"`
	Disabled []DisabledModule `json:"disabled_modules"`
}

// DisabledModule is a module the release has and does not run.
type DisabledModule struct {
	Name        string `json:"name"`
	CanRun      bool   `json:"can_run"`
	ErrorString string `json:"error_string"`
}

// UnmarshalJSON reads both forms: an object (Mimic on), or a bare name
// (Luminous, which does not say whether the module can run).
func (m *DisabledModule) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		*m = DisabledModule{Name: name, CanRun: true}
		return nil
	}
	type plain DisabledModule
	return json.Unmarshal(b, (*plain)(m))
}

// MgrModules lists the mgr modules.
func (r *Runner) MgrModules(ctx context.Context, conn Conn) (Modules, error) {
	var m Modules
	out, err := r.Run(ctx, conn, Command{Name: "mgr module ls", Kind: Read, Args: []string{"mgr", "module", "ls"}})
	if err == nil {
		if err = json.Unmarshal(out, &m); err != nil {
			err = &Error{Command: "mgr module ls", Message: "unexpected output: " + err.Error()}
		}
	}
	return m, err
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

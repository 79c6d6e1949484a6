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

// Modules is `ceph mgr module ls`: what this release has, runs and always runs.
type Modules struct {
	AlwaysOn []string `json:"always_on_modules"`
	Enabled  []string `json:"enabled_modules"`
	Disabled []struct {
		Name        string `json:"name"`
		CanRun      bool   `json:"can_run"`
		ErrorString string `json:"error_string"`
	} `json:"disabled_modules"`
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

// EnableModule enables a mgr module (which restarts the mgr).
func (r *Runner) EnableModule(ctx context.Context, conn Conn, module string) error {
	_, err := r.Run(ctx, conn, Command{Name: "mgr module enable", Kind: Write, Args: []string{"mgr", "module", "enable", module}})
	return err
}

// SetOrchestratorBackend points the orchestrator at a backend module.
func (r *Runner) SetOrchestratorBackend(ctx context.Context, conn Conn, backend string) error {
	_, err := r.Run(ctx, conn, Command{Name: "orch set backend", Kind: Write, Args: []string{"orch", "set", "backend", backend}})
	return err
}

// ConfigKeyExists reports whether a config-key is set.
func (r *Runner) ConfigKeyExists(ctx context.Context, conn Conn, key string) (bool, error) {
	_, err := r.Run(ctx, conn, Command{Name: "config-key exists", Kind: Read, Args: []string{"config-key", "exists", key}})
	if IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// ConfigSet sets a config option for who (--force: module options are unknown
// to the mons until the module has loaded).
func (r *Runner) ConfigSet(ctx context.Context, conn Conn, who, option, value string) error {
	_, err := r.Run(ctx, conn, Command{Name: "config set", Kind: Write, Args: []string{"config", "set", who, option, value, "--force"}})
	return err
}

// DashboardSelfSignedCert makes the dashboard create a self-signed certificate.
func (r *Runner) DashboardSelfSignedCert(ctx context.Context, conn Conn) error {
	_, err := r.Run(ctx, conn, Command{Name: "dashboard create-self-signed-cert", Kind: Write, Args: []string{"dashboard", "create-self-signed-cert"}})
	return err
}

// DashboardSetUser sets the password of the dashboard user, creating the user
// with role when it does not exist (ac-user-create answers 0 for an existing
// user, so the set comes first). The password goes through stdin, never argv.
func (r *Runner) DashboardSetUser(ctx context.Context, conn Conn, user, role string, password []byte) error {
	_, err := r.Run(ctx, conn, Command{Name: "dashboard ac-user-set-password", Kind: Write, Stdin: password,
		Args: []string{"dashboard", "ac-user-set-password", user, "--force-password"}})
	if IsNotFound(err) {
		_, err = r.Run(ctx, conn, Command{Name: "dashboard ac-user-create", Kind: Write, Stdin: password,
			Args: []string{"dashboard", "ac-user-create", user, role, "--force-password"}})
	}
	return err
}

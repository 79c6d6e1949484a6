// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

// TestServerAddrKeyOnCeph: the completed mgr's server_addr init containers
// run as a key of their own, which the controller creates. Run exactly as the
// init containers run (their command and flags from the stored Deployment),
// on real Ceph, the key sets its mgr's two server_addr options; with it,
// reading client.admin's key, setting another mgr's option, setting another
// option of its own mgr and turning a module off are refused. The key goes
// with the Deployment.
func TestServerAddrKeyOnCeph(t *testing.T) {
	ctx := t.Context()
	c := cephs[nsMain]
	const id = "sa"
	d := mgrDeployment(t, nsMain, id, 0, nil)
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	stored := &appsv1.Deployment{}
	if err := get(ctx, nsMain, d.Name, stored); err != nil {
		t.Fatal(err)
	}
	for _, v := range stored.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == contract.AdminKeyringSecretName {
			t.Fatalf("the completed mgr mounts %s (volume %s)", contract.AdminKeyringSecretName, v.Name)
		}
	}
	secret := &corev1.Secret{}
	eventually(t, 60*time.Second, "Secret "+contract.ServerAddrKeyringSecretName(id), func(ctx context.Context) (bool, error) {
		return get(ctx, nsMain, contract.ServerAddrKeyringSecretName(id), secret) == nil, nil
	})
	keyring := filepath.Join(t.TempDir(), "keyring")
	if err := os.WriteFile(keyring, secret.Data[contract.KeyringKey], 0o600); err != nil {
		t.Fatal(err)
	}
	// The init containers' flags, with what the kubelet would put in: the
	// cluster's mon address, the Secret's keyring, a Pod IP.
	const podIP = "10.244.7.9"
	expand := strings.NewReplacer("$(ROOK_CEPH_MON_HOST)", c.MonHost, "$(ROOK_CEPH_MON_INITIAL_MEMBERS)", "a", "$(ROOK_POD_IP)", podIP,
		"--keyring="+mutate.ServerAddrKeyringMountPath+"keyring", "--keyring="+keyring)
	var ran int
	for _, ic := range stored.Spec.Template.Spec.InitContainers {
		if !strings.HasSuffix(ic.Name, "-server-addr") {
			continue
		}
		args := []string{"--conf=/dev/null"}
		for _, a := range ic.Args {
			args = append(args, expand.Replace(a))
		}
		if ic.Command[0] != "ceph" {
			t.Fatalf("%s runs %v", ic.Name, ic.Command)
		}
		if _, err := c.Ceph(ctx, args...); err != nil {
			t.Errorf("%s, run with its own key: %v", ic.Name, err)
		}
		ran++
	}
	if ran != len(contract.ServerAddrModules) {
		t.Fatalf("%d server_addr init containers in the completed mgr, want %d", ran, len(contract.ServerAddrModules))
	}
	out, err := c.Ceph(ctx, "config", "dump")
	if err != nil {
		t.Fatal(err)
	}
	var dump []struct{ Section, Name, Value string }
	if err := json.Unmarshal(out, &dump); err != nil {
		t.Fatal(err)
	}
	for _, module := range contract.ServerAddrModules {
		name := "mgr/" + module + "/" + id + "/server_addr"
		if !slices.ContainsFunc(dump, func(o struct{ Section, Name, Value string }) bool {
			return o.Section == "mgr."+id && o.Name == name && o.Value == podIP
		}) {
			t.Errorf("%s of mgr.%s is not %s after the init containers ran", name, id, podIP)
		}
	}

	as := []string{"--conf=/dev/null", "--mon-host=" + c.MonHost, "--name=" + contract.ServerAddrEntity(id), "--keyring=" + keyring}
	for what, cmd := range map[string][]string{
		"read client.admin's key":       {"auth", "get", "client.admin"},
		"set another mgr's server_addr": {"config", "set", "mgr.b", "mgr/dashboard/b/server_addr", podIP, "--force"},
		"set another option of its mgr": {"config", "set", "mgr." + id, "mgr/dashboard/" + id + "/ssl", "false", "--force"},
		"set a global option":           {"config", "set", "global", "mon_allow_pool_delete", "true"},
		"turn a module off":             {"mgr", "module", "disable", "dashboard"},
		"make a key":                    {"auth", "get-or-create", "client.x", "mon", "allow *"},
	} {
		// The output is not shown: had the read passed, it would be a key.
		if _, err := c.Ceph(ctx, append(slices.Clone(as), cmd...)...); err == nil || !strings.Contains(err.Error(), "EACCES") {
			t.Errorf("%s with the server_addr key: %v, want EACCES", what, err)
		}
	}

	if err := k8s.Delete(ctx, stored); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "Deployment gone", func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(get(ctx, nsMain, d.Name, &appsv1.Deployment{})), nil
	})
	if _, err := c.GetKey(ctx, contract.ServerAddrEntity(id)); err == nil || !strings.Contains(err.Error(), "ENOENT") {
		t.Errorf("%s still in Ceph after the mgr went: %v", contract.ServerAddrEntity(id), err)
	}
}

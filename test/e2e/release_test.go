// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// cephReleaseFacts are what the release guard judges by, as Ceph states them
// and as CephRelease <namespace> records them.
type cephReleaseFacts struct {
	RequireOSDRelease string
	MinMonRelease     string
	Health            string
	Standbys          int
}

// cephSays reads the facts from the namespace's Ceph cluster with the ceph
// CLI: the suite's own reading, not the controller's.
func cephSays(t *testing.T, ns string) cephReleaseFacts {
	t.Helper()
	read := func(into any, args ...string) {
		t.Helper()
		out, err := env.Ceph(t.Context(), ns, args...)
		if err != nil {
			t.Fatalf("ceph %s in %s: %v", strings.Join(args, " "), ns, err)
		}
		if err := json.Unmarshal(out, into); err != nil {
			t.Fatalf("ceph %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	var osd struct {
		RequireOSDRelease string `json:"require_osd_release"`
	}
	var mon struct {
		MinMonReleaseName string `json:"min_mon_release_name"`
	}
	var health struct {
		Status string `json:"status"`
	}
	var mgr struct {
		Standbys []json.RawMessage `json:"standbys"`
	}
	read(&osd, "osd", "dump")
	read(&mon, "mon", "dump")
	read(&health, "health")
	read(&mgr, "mgr", "dump")
	return cephReleaseFacts{RequireOSDRelease: osd.RequireOSDRelease, MinMonRelease: mon.MinMonReleaseName, Health: health.Status, Standbys: len(mgr.Standbys)}
}

// recorded is CephRelease <ns> as the controller last wrote it.
func recorded(t *testing.T, ns string) (cephReleaseFacts, error) {
	t.Helper()
	out, err := env.kubectl(t, nil, "get", "cephreleases.mgr.ceph.rook.io", ns, "-o", "json")
	if err != nil {
		return cephReleaseFacts{}, fmt.Errorf("%v: %s", err, out)
	}
	var r struct {
		Status struct {
			RequireOSDRelease string `json:"requireOSDRelease"`
			MinMonRelease     string `json:"minMonRelease"`
			Health            string `json:"health"`
			StandbyMgrs       int    `json:"standbyMgrs"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return cephReleaseFacts{}, fmt.Errorf("%v: %s", err, out)
	}
	s := r.Status
	return cephReleaseFacts{RequireOSDRelease: s.RequireOSDRelease, MinMonRelease: s.MinMonRelease, Health: s.Health, Standbys: s.StandbyMgrs}, nil
}

// TestReleaseGuard: the controller records the real cluster's release
// floors, health and standby mgrs in CephRelease <namespace>, and the
// webhook judges a mgr's image change by them (docs/upgrades.md): more than
// two majors at once, a major downgrade and a release above the cluster's
// floors are refused with the fix, an upgrade within them is admitted, with
// a warning while the cluster has no standby mgr or is not HEALTH_OK. Each
// change is a server-side dry run: judged by the whole admission chain,
// stored nowhere, so the mgr never restarts.
func TestReleaseGuard(t *testing.T) {
	ns, name := env.Namespaces[0], "rook-ceph-mgr-a"
	explainOnFailure(t, ns, name)
	apply(t, env.manifest(t, ns, "a", nil))
	waitReady(t, ns, name)

	// The controller's record agrees with Ceph. The keeper reads every
	// minute and writes on a change: wait for a moment where both agree.
	var ceph cephReleaseFacts
	var last error
	if err := wait.PollUntilContextTimeout(t.Context(), 2*time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		ceph = cephSays(t, ns)
		got, err := recorded(t, ns)
		if err != nil {
			last = err
			return false, nil
		}
		last = fmt.Errorf("CephRelease %s records %+v, Ceph says %+v", ns, got, ceph)
		return got == ceph, nil
	}); err != nil {
		t.Fatalf("the controller's CephRelease never agreed with Ceph: %v", last)
	}
	osdMajor, ok := contract.ReleaseMajor(ceph.RequireOSDRelease)
	if !ok {
		t.Fatalf("require_osd_release %q is no release the suite knows", ceph.RequireOSDRelease)
	}

	from := env.mgrMajor(t)
	setImage := func(tag string) (string, error) {
		t.Helper()
		return env.kubectl(t, nil, "set", "image", "-n", ns, "deployment/"+name, "mgr=quay.io/ceph/ceph:"+tag, "--dry-run=server")
	}
	refused := func(tag string, want ...string) {
		t.Helper()
		out, err := setImage(tag)
		if err == nil {
			t.Fatalf("%s admitted, want refused:\n%s", tag, out)
		}
		for _, w := range append(want, "spec.template.spec.containers[0].image") {
			if !strings.Contains(out, w) {
				t.Errorf("%s refused without %q:\n%s", tag, w, out)
			}
		}
	}

	// Four majors at once; on a cluster whose OSDs require a release more
	// than two below the target, the floor and how to raise it too.
	jump := from + 4
	want := []string{"crosses 4 majors", "upgrade every daemon to " + fmt.Sprint(from+2)}
	if osdMajor < jump-2 {
		name, known := contract.ReleaseNames[jump-2]
		if !known {
			name = fmt.Sprintf("<the name of release %d>", jump-2)
		}
		want = append(want, "require_osd_release is \""+ceph.RequireOSDRelease+"\"", "`ceph osd require-osd-release "+name+"`")
	}
	refused(fmt.Sprintf("v%d.2.4", jump), want...)
	refused(fmt.Sprintf("v%d.2.0", from-1), "goes back a major release")

	// Two majors up is within every floor of a cluster that runs this
	// mgr's release or later: admitted, with the cautions the facts call for.
	up := fmt.Sprintf("v%d.2.7", from+2)
	if osdMajor < from {
		t.Fatalf("the cluster requires OSDs of %s, older than its mgr's %d: the suite cannot choose an admitted upgrade", ceph.RequireOSDRelease, from)
	}
	out, err := setImage(up)
	if err != nil {
		t.Fatalf("%s on a %s cluster: %v\n%s", up, ceph.RequireOSDRelease, err, out)
	}
	cautions := map[string]bool{
		"the cluster has no standby mgr": ceph.Standbys == 0,
		"the cluster is " + ceph.Health:  ceph.Health != "HEALTH_OK",
	}
	for caution, expected := range cautions {
		if strings.Contains(out, caution) != expected {
			t.Errorf("%s with %d standby mgrs, %s: warning %q given %v, want %v:\n%s", up, ceph.Standbys, ceph.Health, caution, !expected, expected, out)
		}
	}
	if ceph.Standbys == 0 && !strings.Contains(out, "images.upgradeReadiness") {
		t.Errorf("the warning does not name its rule images.upgradeReadiness:\n%s", out)
	}
	if got := deployment(t, ns, name).Spec.Template.Spec.Containers[0].Image; got != env.mgrImage() {
		t.Errorf("a dry run stored image %s", got)
	}
}

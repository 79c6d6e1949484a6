// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package helm

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// TestChartAnnotations: Artifact Hub's metadata says what the chart is: the
// license of LICENSE, a pre-release before 1.0.0, the images the chart runs
// by default (values' repositories at the appVersion), and the changes of a
// release from CHANGELOG.md (hack/chart-changes.sh, run by the release
// workflow before helm package): one entry per bullet of its section, each
// of a kind Artifact Hub knows, in a Chart.yaml Helm still loads.
func TestChartAnnotations(t *testing.T) {
	ch := loadChart(t)
	a := ch.Metadata.Annotations
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if a["artifacthub.io/license"] != "Apache-2.0" || !strings.Contains(string(license), "Apache License") || !strings.Contains(string(license), "Version 2.0") {
		t.Errorf("artifacthub.io/license %q; LICENSE is Apache 2.0", a["artifacthub.io/license"])
	}
	if pre := strings.HasPrefix(ch.Metadata.Version, "0.") || strings.Contains(ch.Metadata.Version, "-"); a["artifacthub.io/prerelease"] != map[bool]string{true: "true", false: "false"}[pre] {
		t.Errorf("version %s, artifacthub.io/prerelease %q", ch.Metadata.Version, a["artifacthub.io/prerelease"])
	}
	var images []struct{ Name, Image string }
	if err := yaml.UnmarshalStrict([]byte(a["artifacthub.io/images"]), &images); err != nil {
		t.Fatalf("artifacthub.io/images: %v", err)
	}
	img := ch.Values["image"].(map[string]any)
	var want []string
	for _, c := range []string{"webhook", "bootstrap"} {
		want = append(want, img[c].(map[string]any)["repository"].(string)+":"+ch.Metadata.AppVersion)
	}
	var got []string
	for _, i := range images {
		got = append(got, i.Image)
	}
	if !slices.Equal(got, want) {
		t.Errorf("artifacthub.io/images %v; the chart runs %v", got, want)
	}

	// The changes of v0.1.0, appended as the release workflow does.
	dir := t.TempDir()
	cp := exec.Command("cp", "-r", chartDir(t), dir)
	if out, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	chartYAML := filepath.Join(dir, "mgr-webhook", "Chart.yaml")
	run := exec.Command(filepath.Join(root, "hack", "chart-changes.sh"), "v0.1.0", chartYAML)
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("hack/chart-changes.sh: %v\n%s", err, out)
	}
	released, err := loader.Load(filepath.Join(dir, "mgr-webhook"))
	if err != nil {
		t.Fatalf("the chart with its changes does not load: %v", err)
	}
	var changes []struct{ Kind, Description string }
	if err := yaml.UnmarshalStrict([]byte(released.Metadata.Annotations["artifacthub.io/changes"]), &changes); err != nil {
		t.Fatalf("artifacthub.io/changes: %v\n%s", err, released.Metadata.Annotations["artifacthub.io/changes"])
	}
	section, err := exec.Command(filepath.Join(root, "hack", "changelog-section.sh"), "v0.1.0").Output()
	if err != nil {
		t.Fatal(err)
	}
	bullets := 0
	kind := ""
	for _, line := range strings.Split(string(section), "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			kind = strings.ToLower(h)
		}
		if strings.HasPrefix(line, "- ") && slices.Contains([]string{"added", "changed", "deprecated", "removed", "fixed", "security"}, kind) {
			bullets++
		}
	}
	if len(changes) != bullets || bullets == 0 {
		t.Errorf("%d changes for the %d bullets of v0.1.0's section", len(changes), bullets)
	}
	for _, c := range changes {
		if !slices.Contains([]string{"added", "changed", "deprecated", "removed", "fixed", "security"}, c.Kind) || c.Description == "" || regexp.MustCompile("[`*]").MatchString(c.Description) {
			t.Errorf("change %+v: not an Artifact Hub kind, or an empty or Markdown description", c)
		}
	}
	for k, v := range a {
		if released.Metadata.Annotations[k] != v {
			t.Errorf("annotation %s changed by chart-changes.sh", k)
		}
	}
}

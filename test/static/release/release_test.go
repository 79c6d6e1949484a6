// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package release holds the release machinery to what docs/releases.md and
// CONTRIBUTING promise, read from the files GitHub and Docker run: nothing is
// published before CI passes on the tagged commit, the release YAML comes
// with signed checksums, the images name their source, and every pinned
// dependency has an update configuration.
package release

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var root = filepath.Join("..", "..", "..")

func read(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

type workflow struct {
	// "on" is YAML 1.1's true to sigs.k8s.io/yaml; GitHub reads it as "on".
	On   map[string]any `json:"true"`
	Jobs map[string]struct {
		Uses  string `json:"uses"`
		Needs any    `json:"needs"`
		Steps []struct {
			Run string `json:"run"`
		} `json:"steps"`
	} `json:"jobs"`
}

func needsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// TestReleaseWaitsForCI: the release workflow calls ci.yaml (which can be
// called) and every job that publishes needs it, directly or through another
// job: a tag on a commit whose tests fail publishes nothing.
func TestReleaseWaitsForCI(t *testing.T) {
	var ci, rel workflow
	if err := yaml.Unmarshal(read(t, ".github/workflows/ci.yaml"), &ci); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(read(t, ".github/workflows/release.yaml"), &rel); err != nil {
		t.Fatal(err)
	}
	if _, ok := ci.On["workflow_call"]; !ok {
		t.Fatal("ci.yaml has no workflow_call trigger: the release cannot run it")
	}
	var gate string
	for name, j := range rel.Jobs {
		if j.Uses == "./.github/workflows/ci.yaml" {
			gate = name
		}
	}
	if gate == "" {
		t.Fatal("release.yaml has no job that uses ./.github/workflows/ci.yaml")
	}
	var waits func(job string, seen map[string]bool) bool
	waits = func(job string, seen map[string]bool) bool {
		if seen[job] {
			return false
		}
		seen[job] = true
		for _, n := range needsOf(rel.Jobs[job].Needs) {
			if n == gate || waits(n, seen) {
				return true
			}
		}
		return false
	}
	for name := range rel.Jobs {
		if name != gate && !waits(name, map[string]bool{}) {
			t.Errorf("release job %q does not wait for %q (CI on the tagged commit)", name, gate)
		}
	}
}

// TestReleaseYAMLIsChecksummedAndSigned: the job that attaches the release
// files makes them with make release (which writes SHA256SUMS over them),
// signs SHA256SUMS with cosign and attaches it, its bundle, the YAML and the
// plugin's archives and krew manifest.
func TestReleaseYAMLIsChecksummedAndSigned(t *testing.T) {
	var rel workflow
	if err := yaml.Unmarshal(read(t, ".github/workflows/release.yaml"), &rel); err != nil {
		t.Fatal(err)
	}
	found := false
	for name, j := range rel.Jobs {
		for _, s := range j.Steps {
			if !strings.Contains(s.Run, "gh release create") {
				continue
			}
			found = true
			for _, want := range []string{"make release", "cosign sign-blob", "dist/SHA256SUMS ", "dist/SHA256SUMS.bundle", "dist/install-self-signed.yaml", "dist/kubectl-mgr_\"$VERSION\"_*.tar.gz", "dist/mgr.krew.yaml"} {
				if !strings.Contains(s.Run, want) {
					t.Errorf("job %s's release step lacks %q:\n%s", name, want, s.Run)
				}
			}
			if i, j := strings.Index(s.Run, "cosign sign-blob"), strings.Index(s.Run, "gh release create"); i > j {
				t.Errorf("job %s publishes before it signs", name)
			}
		}
	}
	if !found {
		t.Fatal("no step of release.yaml runs gh release create")
	}
}

// TestImagesCarryOCILabels: each image the Dockerfile makes names its source,
// license, version and revision (OCI annotations), the version and revision
// from the build arguments make docker-build and the release pass.
func TestImagesCarryOCILabels(t *testing.T) {
	df := string(read(t, "Dockerfile"))
	stages := regexp.MustCompile(`(?m)^FROM .* AS (\w+)$`).FindAllStringSubmatchIndex(df, -1)
	body := map[string]string{}
	for i, m := range stages {
		end := len(df)
		if i+1 < len(stages) {
			end = stages[i+1][0]
		}
		body[df[m[2]:m[3]]] = df[m[0]:end]
	}
	for _, stage := range []string{"webhook", "bootstrap"} {
		b, ok := body[stage]
		if !ok {
			t.Errorf("the Dockerfile has no stage %s", stage)
			continue
		}
		for _, want := range []string{
			`org.opencontainers.image.source="https://github.com/rook-mgr/mgr-webhook"`,
			`org.opencontainers.image.licenses="Apache-2.0"`,
			`org.opencontainers.image.version="${VERSION}"`,
			`org.opencontainers.image.revision="${REVISION}"`,
			`org.opencontainers.image.title="mgr-` + stage + `"`,
		} {
			if !strings.Contains(b, want) {
				t.Errorf("stage %s lacks the label %s", stage, want)
			}
		}
		// A stage sees a build argument only when it declares it.
		for _, arg := range []string{"VERSION", "REVISION"} {
			if !regexp.MustCompile(`(?m)^ARG ` + arg + `\b`).MatchString(b) {
				t.Errorf("stage %s labels ${%s} without declaring ARG %s: the label would be empty", stage, arg, arg)
			}
		}
	}
}

// TestDependabotCoversEveryPin: the SHA-pinned actions, both Go modules and
// the Dockerfile's base images each have an update configuration.
func TestDependabotCoversEveryPin(t *testing.T) {
	var cfg struct {
		Updates []struct {
			Ecosystem string `json:"package-ecosystem"`
			Directory string `json:"directory"`
		} `json:"updates"`
	}
	if err := yaml.Unmarshal(read(t, ".github/dependabot.yml"), &cfg); err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, u := range cfg.Updates {
		have = append(have, u.Ecosystem+" "+u.Directory)
	}
	for _, want := range []string{"github-actions /", "gomod /", "gomod /test", "docker /"} {
		if !slices.Contains(have, want) {
			t.Errorf("dependabot.yml updates %v, not %q", have, want)
		}
	}
}

// TestPluginArchiveRunsUnderKubectl: the plugin's archive (hack/dist-plugin.sh,
// as make release builds it) holds kubectl-mgr, which the krew manifest
// names by the archive's sha256; on the PATH, the real kubectl runs it as
// `kubectl mgr`.
func TestPluginArchiveRunsUnderKubectl(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run the tests with make test (kubectl is one of the binaries it builds)")
	}
	dist := t.TempDir()
	const version = "v0.0.0-plugintest"
	cmd := exec.Command("./hack/dist-plugin.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "VERSION="+version, "DIST="+dist, "PLATFORMS=linux/"+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/dist-plugin.sh: %v\n%s", err, out)
	}
	archive := filepath.Join(dist, "kubectl-mgr_"+version+"_linux_"+runtime.GOARCH+".tar.gz")
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	var krew struct {
		Metadata struct{ Name string }
		Spec     struct {
			Version   string
			Platforms []struct {
				URI, Sha256, Bin string
			}
		}
	}
	raw, err := os.ReadFile(filepath.Join(dist, "mgr.krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &krew); err != nil {
		t.Fatalf("mgr.krew.yaml: %v\n%s", err, raw)
	}
	sum := sha256.Sum256(data)
	if krew.Metadata.Name != "mgr" || krew.Spec.Version != version || len(krew.Spec.Platforms) != 1 ||
		krew.Spec.Platforms[0].Sha256 != hex.EncodeToString(sum[:]) || krew.Spec.Platforms[0].Bin != "kubectl-mgr" ||
		!strings.HasSuffix(krew.Spec.Platforms[0].URI, "/releases/download/"+version+"/"+filepath.Base(archive)) {
		t.Errorf("the krew manifest %+v does not name the archive (sha256 %x)", krew, sum)
	}

	bin := t.TempDir()
	tar := exec.Command("tar", "-xzf", archive, "-C", bin)
	if out, err := tar.CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	for _, f := range []string{"kubectl-mgr", "LICENSE"} {
		if _, err := os.Stat(filepath.Join(bin, f)); err != nil {
			t.Errorf("the archive lacks %s", f)
		}
	}
	kubectl := func(args ...string) string {
		t.Helper()
		c := exec.Command(filepath.Join(assets, "kubectl"), args...)
		c.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG=/nonexistent")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := kubectl("plugin", "list"); !strings.Contains(out, filepath.Join(bin, "kubectl-mgr")) {
		t.Errorf("kubectl plugin list does not find it:\n%s", out)
	}
	if out := kubectl("mgr", "version"); !strings.Contains(out, version) {
		t.Errorf("kubectl mgr version: %s", out)
	}
	if out := kubectl("mgr", "--help"); !strings.Contains(out, "kubectl mgr [command]") {
		t.Errorf("kubectl mgr --help does not name itself kubectl mgr:\n%s", out)
	}
}

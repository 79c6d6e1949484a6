// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/distribution/reference"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"mvdan.cc/sh/v3/shell"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

var (
	releaseURL     = regexp.MustCompile(`^https://github\.com/rook-mgr/mgr-webhook/releases/download/([^/]+)/(install-[a-z-]+\.yaml)$`)
	certManagerURL = regexp.MustCompile(`^https://github\.com/cert-manager/cert-manager/releases/download/([^/]+)/cert-manager\.yaml$`)
)

// release runs `make release`'s script for version into a temporary dist.
func release(t *testing.T, version string, env ...string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "hack", "release.sh"))
	cmd.Env = append(append(os.Environ(), "VERSION="+version, "DIST="+dist, "KUBECTL="+filepath.Join(assets, "kubectl")), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/release.sh: %v\n%s", err, out)
	}
	return dist
}

// TestReleaseManifestsCarryTheirVersion: every image of both release files is
// ours, tagged with the version released, and every object says the version.
func TestReleaseManifestsCarryTheirVersion(t *testing.T) {
	const version = "v0.7.3-rc.1" // not the kustomize base's tag
	dist := release(t, version)
	for _, mode := range []string{"self-signed", "cert-manager"} {
		t.Run(mode, func(t *testing.T) {
			_, objs := buildFile(t, filepath.Join(dist, "install-"+mode+".yaml"))
			images := 0
			for key, doc := range objs {
				u := &unstructured.Unstructured{}
				if err := yaml.Unmarshal(doc, &u.Object); err != nil {
					t.Fatal(err)
				}
				if got := u.GetLabels()["app.kubernetes.io/version"]; got != version {
					t.Errorf("%s: app.kubernetes.io/version %q", key, got)
				}
				if u.GetKind() != "Deployment" {
					continue
				}
				d := &appsv1.Deployment{}
				objs.get(t, key, d)
				for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
					ref, err := reference.ParseNormalizedNamed(c.Image)
					tagged, ok := ref.(reference.NamedTagged)
					if err != nil || !ok || tagged.Tag() != version || !strings.HasPrefix(ref.Name(), "ghcr.io/rook-mgr/") {
						t.Errorf("%s container %s: image %q, want ghcr.io/rook-mgr/...:%s", key, c.Name, c.Image, version)
					}
					images++
				}
			}
			if images != 2 {
				t.Errorf("%d images, want the webhook's and the controller's", images)
			}
		})
	}
}

// TestREADMEInstallsApply runs the README's release-YAML install commands
// for each mode (rendered by make release for the README's version) with
// --dry-run=server against a real API server: a `kubectl apply` line as it
// is, and a pipeline `curl -sL <release URL> | sed ... | kubectl apply -f -`
// with curl reading the rendered file and sed the real one. cert-manager's
// own release line is checked to name the version in test/go.mod, whose CRDs
// the test installs in its place. (The kustomize blocks:
// TestOverlaysApplyToARealAPIServer.)
func TestREADMEInstallsApply(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := testenv.CertManagerCRDs()
	if err != nil {
		t.Fatal(err)
	}
	cmVersion := filepath.Base(filepath.Dir(filepath.Dir(crds))) // .../cert-manager@v1.21.2/deploy/crds
	_, cmVersion, _ = strings.Cut(cmVersion, "@")
	api, err := testenv.StartForInstalls("mgr-webhook-system")
	if err != nil {
		t.Fatal(err)
	}
	defer api.Stop()
	dists := map[string]string{} // version -> rendered release, for the whole test
	top := t
	// local maps a release URL to its rendered file.
	local := func(url string) (string, bool) {
		m := releaseURL.FindStringSubmatch(url)
		if m == nil {
			return "", false
		}
		if dists[m[1]] == "" {
			dists[m[1]] = release(top, m[1])
		}
		return filepath.Join(dists[m[1]], m[2]), true
	}
	for _, name := range []string{"release-self-signed", "release-cert-manager"} {
		t.Run(name, func(t *testing.T) {
			block, err := testenv.READMEBlock(name)
			if err != nil {
				t.Fatal(err)
			}
			ran := 0
			for _, line := range strings.Split(block, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "#") || strings.TrimSpace(line) == "" {
					continue
				}
				stages := strings.Split(line, " | ")
				var stdin []byte
				for i, stage := range stages[:len(stages)-1] {
					args := shellWords(t, stage)
					switch {
					case i == 0 && len(args) == 3 && args[0] == "curl" && args[1] == "-sL":
						file, ok := local(args[2])
						if !ok {
							t.Fatalf("README %s: curl of %s, not a release file", name, args[2])
						}
						if stdin, err = os.ReadFile(file); err != nil {
							t.Fatal(err)
						}
					case i > 0 && args[0] == "sed":
						cmd := exec.Command("sed", args[1:]...)
						cmd.Stdin = strings.NewReader(string(stdin))
						if stdin, err = cmd.Output(); err != nil {
							t.Fatalf("%s: %v", stage, err)
						}
					default:
						t.Fatalf("README %s: %q is not understood by this test", name, stage)
					}
				}
				args := shellWords(t, stages[len(stages)-1])
				if len(args) < 2 || args[0] != "kubectl" || args[1] != "apply" {
					t.Fatalf("README %s: %q does not end in a kubectl apply", name, line)
				}
				skip := false
				for i, a := range args {
					if m := certManagerURL.FindStringSubmatch(a); m != nil {
						if m[1] != cmVersion {
							t.Errorf("README installs cert-manager %s, the tests use %s (test/go.mod)", m[1], cmVersion)
						}
						skip = true // its CRDs are installed above
					}
					if file, ok := local(a); ok {
						args[i] = file
					}
				}
				if skip {
					continue
				}
				cmd := exec.Command(api.Kubectl, append(append(args[1:], "--dry-run=server"), "--kubeconfig", api.Kubeconfig)...)
				cmd.Dir, cmd.Stdin = root, strings.NewReader(string(stdin))
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v\n%s", line, err, out)
				}
				if n := strings.Count(string(out), "(server dry run)"); n < 20 {
					t.Errorf("%s: %d objects applied:\n%s", line, n, out)
				}
				if !strings.Contains(string(out), "networkpolicy.networking.k8s.io/mgr-webhook") {
					t.Errorf("%s: NetworkPolicy mgr-webhook not applied:\n%s", line, out)
				}
				ran++
			}
			if ran == 0 {
				t.Errorf("README %s installs nothing", name)
			}
		})
	}
}

// shellWords splits a command line into words as sh does (quotes removed),
// with an empty environment.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	words, err := shell.Fields(line, nil)
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	return words
}

// TestChangelogHasTheREADMEVersion: the version the README installs has its
// CHANGELOG section, which the release workflow publishes as the notes
// (hack/changelog-section.sh), and the script refuses a version without one.
func TestChangelogHasTheREADMEVersion(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	block, err := testenv.READMEBlock("release-self-signed")
	if err != nil {
		t.Fatal(err)
	}
	var version string
	for _, f := range strings.Fields(block) {
		if m := releaseURL.FindStringSubmatch(f); m != nil {
			version = m[1]
		}
	}
	if version == "" {
		t.Fatalf("no release URL in the README's block:\n%s", block)
	}
	script := filepath.Join(root, "hack", "changelog-section.sh")
	out, err := exec.Command(script, version).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "### Added") {
		t.Errorf("CHANGELOG.md section of %s: %v\n%s", version, err, out)
	}
	if out, err := exec.Command(script, "v0.0.0-none").CombinedOutput(); err == nil {
		t.Errorf("a version without a section was accepted:\n%s", out)
	}
}

// TestREADMEQuickInstall: each command of the README's first install block
// is, verbatim, one of those the tests run (the helm block, test/helm; the
// release YAML's, TestREADMEInstallsApply).
func TestREADMEQuickInstall(t *testing.T) {
	quick, err := testenv.READMEBlock("quick-install")
	if err != nil {
		t.Fatal(err)
	}
	var tested []string
	for _, name := range []string{"helm", "release-self-signed"} {
		block, err := testenv.READMEBlock(name)
		if err != nil {
			t.Fatal(err)
		}
		tested = append(tested, strings.Split(block, "\n")...)
	}
	n := 0
	for _, line := range strings.Split(quick, "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n++
		if !slices.Contains(tested, line) {
			t.Errorf("the README's quick install runs %q, which no tested block has", line)
		}
	}
	if n != 2 {
		t.Errorf("%d commands in the quick install block, want helm's and kubectl's", n)
	}
}

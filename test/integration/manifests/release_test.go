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
			dist := "" // what the block's make release rendered
			for _, line := range strings.Split(block, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "#") || strings.TrimSpace(line) == "" {
					continue
				}
				if strings.HasPrefix(line, "make release ") {
					args := shellWords(t, line)
					var env []string
					version := ""
					for _, a := range args[2:] {
						k, v, ok := strings.Cut(a, "=")
						if !ok || (k != "VERSION" && k != "REGISTRY") {
							t.Fatalf("README %s: make release argument %q not understood by this test", name, a)
						}
						if k == "VERSION" {
							version = v
						} else {
							env = append(env, a)
						}
					}
					dist = release(t, version, env...)
					continue
				}
				// dist/install-<mode>.yaml: what make release rendered.
				inDist := func(a string) (string, bool) {
					if f, ok := strings.CutPrefix(a, "dist/"); ok && dist != "" {
						return filepath.Join(dist, f), true
					}
					return "", false
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
					case i == 0 && len(args) == 3 && args[0] == "sed":
						file, ok := inDist(args[2])
						if !ok {
							t.Fatalf("README %s: sed of %s, not a file make release rendered", name, args[2])
						}
						out, err := exec.Command("sed", args[1], file).Output()
						if err != nil {
							t.Fatalf("%s: %v", stage, err)
						}
						stdin = out
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
					if file, ok := inDist(a); ok {
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

// TestChangelogReleasesArePublishedOrSaySo: each release section of the
// CHANGELOG names a version this repository has a tag for, or says it is not
// yet published; hack/changelog-section.sh (the release workflow's notes)
// prints a section, and refuses a version without one.
func TestChangelogReleasesArePublishedOrSaySo(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`(?m)^## \[(v[0-9][^\]]*)\](.*)$`)
	sections := heading.FindAllStringSubmatch(string(data), -1)
	if len(sections) == 0 {
		t.Fatal("CHANGELOG.md has no release section")
	}
	script := filepath.Join(root, "hack", "changelog-section.sh")
	for _, m := range sections {
		version, rest := m[1], m[2]
		if !tagged(t, root, version) && !strings.Contains(rest, "not yet published") {
			t.Errorf("CHANGELOG.md: %s has no tag in this repository and its heading %q does not say it is not yet published", version, m[0])
		}
		if out, err := exec.Command(script, version).CombinedOutput(); err != nil || !strings.Contains(string(out), "### Added") {
			t.Errorf("CHANGELOG.md section of %s: %v\n%s", version, err, out)
		}
	}
	if out, err := exec.Command(script, "v0.0.0-none").CombinedOutput(); err == nil {
		t.Errorf("a version without a section was accepted:\n%s", out)
	}
}

// tagged reports whether the repository at root has tag version.
func tagged(t *testing.T, root, version string) bool {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "tag", "--list", version).Output()
	if err != nil {
		t.Fatalf("git tag --list: %v", err)
	}
	return strings.TrimSpace(string(out)) == version
}

// publishedVersion is how the README and docs/ could name a release of this
// project: a chart --version, a release download, a kustomize ref, an image
// tag of ours.
var publishedVersion = regexp.MustCompile(`(?:charts/mgr-webhook\S* --version |rook-mgr/mgr-webhook/releases/download/|mgr-webhook//\S+\?ref=|ghcr\.io/rook-mgr/mgr-(?:webhook|bootstrap):)(v?[0-9]+\.[0-9]+\.[0-9][^\s/#'"]*)`)

// TestNamedVersionsAreTagged: a version of this project that the README or a
// page of docs/ installs from has its tag in this repository: no install line
// names a release that does not exist.
func TestNamedVersionsAreTagged(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range append([]string{filepath.Join(root, "README.md")}, pages...) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range publishedVersion.FindAllStringSubmatch(string(data), -1) {
			v := m[1]
			if !strings.HasPrefix(v, "v") {
				v = "v" + v
			}
			if !tagged(t, root, v) {
				t.Errorf("%s installs %q: version %s has no tag in this repository", filepath.Base(page), m[0], v)
			}
		}
	}
}

// TestREADMEInstall: the README's install block is runnable as written: its
// make docker-build tags the two images its docker push lines push, and its
// helm line is, verbatim, one that TestREADMEHelmBlock renders and applies
// (docs/install.md's helm block, whose chart runs those images).
func TestREADMEInstall(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	block, err := testenv.READMEBlock("install")
	if err != nil {
		t.Fatal(err)
	}
	helm, err := testenv.READMEBlock("helm")
	if err != nil {
		t.Fatal(err)
	}
	var built, pushed []string
	helmLines := 0
	for _, line := range strings.Split(block, "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, cmdline := range strings.Split(line, " && ") {
			args := shellWords(t, cmdline)
			switch {
			case len(args) > 2 && args[0] == "make" && args[1] == "docker-build":
				out, err := exec.Command("make", append([]string{"-C", root, "-n", "--no-print-directory"}, args[1:]...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("make -n %s: %v\n%s", strings.Join(args[1:], " "), err, out)
				}
				for _, w := range strings.Fields(string(out)) {
					if strings.HasPrefix(w, "registry.example.com/") {
						built = append(built, w)
					}
				}
			case len(args) == 3 && args[0] == "docker" && args[1] == "push":
				pushed = append(pushed, args[2])
			case len(args) > 2 && args[0] == "helm" && args[1] == "install":
				helmLines++
				if !slices.Contains(strings.Split(helm, "\n"), cmdline) {
					t.Errorf("the README runs %q, which docs/install.md's tested helm block does not have", cmdline)
				}
			default:
				t.Errorf("the README's install block runs %q, which this test does not know", cmdline)
			}
		}
	}
	slices.Sort(built)
	slices.Sort(pushed)
	if len(built) != 2 || !slices.Equal(built, pushed) {
		t.Errorf("make docker-build tags %v, docker push pushes %v: want the same two images", built, pushed)
	}
	if helmLines != 1 {
		t.Errorf("%d helm install lines in the README's install block, want 1", helmLines)
	}
}

// TestReleaseRegistry: make release REGISTRY=... names the images there, as
// make docker-build REGISTRY=... tags them (docs/install.md).
func TestReleaseRegistry(t *testing.T) {
	dist := release(t, "dev", "REGISTRY=registry.example.com/rook-mgr")
	for _, mode := range []string{"self-signed", "cert-manager"} {
		data, err := os.ReadFile(filepath.Join(dist, "install-"+mode+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"image: registry.example.com/rook-mgr/mgr-webhook:dev", "image: registry.example.com/rook-mgr/mgr-bootstrap:dev"} {
			if !strings.Contains(string(data), want) {
				t.Errorf("install-%s.yaml lacks %q", mode, want)
			}
		}
		if strings.Contains(string(data), "ghcr.io/rook-mgr/") {
			t.Errorf("install-%s.yaml still names ghcr.io/rook-mgr/", mode)
		}
	}
}

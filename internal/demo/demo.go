// Package demo shows the project's job on a local cluster: a minimal mgr
// Deployment applied with kubectl and stored complete, and a policy denial.
package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/internal/localcluster"
)

// Options configure a demo run.
type Options struct {
	RepoRoot, BinDir, WorkDir string
	// OneShot exits after the show instead of keeping the cluster up.
	OneShot bool
}

// Run starts the local cluster, shows the completion and a denial, then
// keeps the cluster up until ctx ends (unless OneShot).
func Run(ctx context.Context, o Options, out io.Writer) error {
	c, err := localcluster.Start(ctx, localcluster.Options{
		RepoRoot: o.RepoRoot, BinDir: o.BinDir, WorkDir: o.WorkDir, Namespaces: []string{"rook-ceph"}, Log: out,
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "==> stopping the local cluster")
		c.Stop()
	}()
	kubectl := func(stdin []byte, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, c.API.Kubectl, append([]string{"--kubeconfig", c.API.Kubeconfig}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	example := filepath.Join(o.RepoRoot, "manifests", "examples", "minimal-mgr.yaml")
	applied, err := os.ReadFile(example)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n==> kubectl apply -f %s\n%s", rel(o.RepoRoot, example), indent(string(applied)))
	res, err := kubectl(nil, "apply", "-f", example)
	fmt.Fprint(out, indent(res))
	if err != nil {
		return fmt.Errorf("kubectl apply: %w", err)
	}

	stored, err := kubectl(nil, "get", "deployment", "-n", "rook-ceph", "rook-ceph-mgr-a", "-o", "yaml")
	if err != nil {
		return fmt.Errorf("kubectl get: %s", stored)
	}
	diff, err := whatWasAdded(applied, []byte(stored))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n==> what the webhook added (applied -> stored; API-server bookkeeping left out)\n%s", diff)

	bad := strings.Replace(string(applied), "spec:\n", "spec:\n  replicas: 2\n", 1)
	bad = strings.Replace(bad, "quay.io/ceph/ceph:v16.2.15", "docker.io/library/busybox:latest", 1)
	fmt.Fprintln(out, "\n==> a bad spec (replicas: 2, image busybox:latest) is refused, field by field")
	res, err = kubectl([]byte(bad), "apply", "-f", "-")
	fmt.Fprint(out, indent(res))
	if err == nil {
		return fmt.Errorf("the bad spec was admitted")
	}

	if o.OneShot {
		return nil
	}
	fmt.Fprintf(out, "\n==> the cluster stays up; in another shell:\n    export KUBECONFIG=%s\n    kubectl get deploy -n rook-ceph rook-ceph-mgr-a -o yaml\nPress Ctrl-C to stop and clean up.\n", c.API.Kubeconfig)
	<-ctx.Done()
	return nil
}

// whatWasAdded diffs the applied manifest with the stored object, both
// normalized to sorted YAML, leaving out the API server's bookkeeping.
func whatWasAdded(applied, stored []byte) (string, error) {
	normalize := func(doc []byte) (string, error) {
		m := map[string]any{}
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return "", err
		}
		delete(m, "status")
		if meta, ok := m["metadata"].(map[string]any); ok {
			for _, k := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"} {
				delete(meta, k)
			}
			if anns, ok := meta["annotations"].(map[string]any); ok {
				delete(anns, "kubectl.kubernetes.io/last-applied-configuration")
				delete(anns, "deployment.kubernetes.io/revision")
				if len(anns) == 0 {
					delete(meta, "annotations")
				}
			}
		}
		out, err := yaml.Marshal(m)
		return string(out), err
	}
	a, err := normalize(applied)
	if err != nil {
		return "", err
	}
	s, err := normalize(stored)
	if err != nil {
		return "", err
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(a), B: difflib.SplitLines(s), FromFile: "applied", ToFile: "stored", Context: 2,
	})
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") + "\n"
}

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}

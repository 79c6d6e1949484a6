// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package demo shows the whole job on a local cluster: a minimal mgr
// Deployment applied with kubectl is stored complete, its pod becomes Ready,
// the controller creates the keyring and Services and enables the modules in
// a real Ceph cluster, and a bad spec is refused.
package demo

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/aymanbagabas/go-udiff"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/cephtest"
	"github.com/rook-mgr/mgr-webhook/internal/harness/localcluster"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
)

// Options configure a demo run.
type Options struct {
	RepoRoot, BinDir, WorkDir string
	// OneShot exits after the show instead of keeping the cluster up.
	OneShot bool
}

const ns, name = "rook-ceph", "rook-ceph-mgr-a"

// Run starts the local cluster, shows the job, then keeps the cluster up
// until ctx ends (unless OneShot). Everything started is stopped on return.
func Run(ctx context.Context, o Options, out io.Writer) error {
	c, err := localcluster.Start(ctx, localcluster.Options{
		RepoRoot: o.RepoRoot, BinDir: o.BinDir, WorkDir: o.WorkDir, CephNamespaces: []string{ns}, MgrIDs: []string{"a", "b"}, Log: out,
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "==> stopping the local cluster and Ceph, removing their files")
		c.Stop()
	}()
	kubectl := func(stdin []byte, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, c.API.Kubectl, append([]string{"--kubeconfig", c.API.Kubeconfig}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	show := func(title string, args ...string) {
		res, _ := kubectl(nil, args...)
		fmt.Fprintf(out, "\n==> %s\n%s", title, indent(res))
	}

	example := filepath.Join(o.RepoRoot, "manifests", "examples", "minimal-mgr.yaml")
	applied, err := os.ReadFile(example)
	if err != nil {
		return err
	}
	// The example names a release the local daemons may not run: the release
	// guard would judge that as an upgrade once the controller has read the
	// cluster, so the demo names the daemons' own.
	at, err := cephtest.AtDaemonRelease(applied)
	if err != nil {
		return err
	}
	if string(at) != string(applied) {
		applied = at
		fmt.Fprintf(out, "\n==> kubectl apply -f manifests/examples/minimal-mgr.yaml, its image the release the local Ceph daemons run\n%s", indent(string(applied)))
	} else {
		fmt.Fprintf(out, "\n==> kubectl apply -f manifests/examples/minimal-mgr.yaml\n%s", indent(string(applied)))
	}
	res, err := kubectl(applied, "apply", "-f", "-")
	fmt.Fprint(out, indent(res))
	if err != nil {
		return fmt.Errorf("kubectl apply: %w", err)
	}
	stored, err := kubectl(nil, "get", "deployment", "-n", ns, name, "-o", "yaml")
	if err != nil {
		return fmt.Errorf("kubectl get: %s", stored)
	}
	diff, err := whatWasAdded(applied, []byte(stored))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n==> what the webhook added (applied -> stored; API-server bookkeeping left out)\n%s", diff)

	fmt.Fprintln(out, "\n==> waiting for the mgr pod (kwok plays the kubelet) and the bootstrap controller")
	last := mgrstatus.Phase("")
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return false, nil
		}
		st, err := mgrstatus.Of(d)
		if err != nil {
			return false, err
		}
		if st.Phase != last && st.Phase != "" {
			fmt.Fprintf(out, "    phase %s\n", st.Phase)
			last = st.Phase
		}
		return st.Phase == mgrstatus.PhaseReady, nil
	})
	if err != nil {
		return fmt.Errorf("the mgr was not bootstrapped: %w (logs in %s)", err, c.WorkDir)
	}
	show("the mgr pod", "get", "pods", "-n", ns, "-l", "app=rook-ceph-mgr,mgr=a", "-o", "wide")
	keyring, _ := kubectl(nil, "get", "secret", "-n", ns, contract.KeyringSecretName("a"), "-o", "jsonpath={.data.keyring}")
	fmt.Fprintf(out, "\n==> Secret %s (key redacted)\n%s", contract.KeyringSecretName("a"), indent(redact(decodeB64(keyring))))
	show("the Services", "get", "services", "-n", ns, "-l", "app=rook-ceph-mgr")
	cc := c.Cephs[ns]
	mods, err := cc.Ceph(ctx, "mgr", "module", "ls")
	if err != nil {
		return err
	}
	var ls struct {
		Enabled []string `json:"enabled_modules"`
	}
	_ = json.Unmarshal(mods, &ls)
	fmt.Fprintf(out, "\n==> ceph mgr module ls: enabled modules\n    %s\n", strings.Join(ls.Enabled, " "))
	show("the bootstrap status annotation", "get", "deployment", "-n", ns, name, "-o", "jsonpath={.metadata.annotations.mgr\\.ceph\\.rook\\.io/bootstrap-status}")
	show("Events", "get", "events", "-n", ns, "--field-selector", "involvedObject.name="+name, "--sort-by=.metadata.creationTimestamp")

	bad := strings.Replace(string(applied), "spec:\n", "spec:\n  replicas: 2\n", 1)
	bad = strings.Replace(bad, "quay.io/ceph/ceph:v16.2.15", "docker.io/library/busybox:latest", 1)
	fmt.Fprintln(out, "\n==> a bad spec (replicas: 2, image busybox:latest) is refused, field by field")
	res, err = kubectl([]byte(bad), "apply", "-f", "-")
	fmt.Fprint(out, indent(res))
	if err == nil {
		return fmt.Errorf("the bad spec was admitted")
	}

	if err := failover(ctx, c, o.RepoRoot, out, kubectl, show); err != nil {
		return err
	}

	if o.OneShot {
		return nil
	}
	fmt.Fprintf(out, "\n==> the cluster stays up; in another shell:\n    export KUBECONFIG=%s\n    kubectl get deploy,pods,svc,secrets -n %s\n    ceph -c %s mgr module ls\nPress Ctrl-C to stop and clean up.\n", c.API.Kubeconfig, ns, cc.Conf)
	<-ctx.Done()
	return nil
}

// failover adds mgr b beside a, then fails a over in Ceph: the pods'
// mgr_role labels, and with them the cluster's Services, follow.
func failover(ctx context.Context, c *localcluster.Cluster, root string, out io.Writer,
	kubectl func([]byte, ...string) (string, error), show func(string, ...string)) error {
	cc := c.Cephs[ns]
	p := cc.MgrPorts["b"]
	mb, err := testenv.MinimalMgr(root, ns, "b", [2]int32{int32(p[0]), int32(p[1])}, nil)
	if err != nil {
		return err
	}
	if mb, err = cephtest.AtDaemonRelease(mb); err != nil {
		return err
	}
	fmt.Fprintln(out, "\n==> a second mgr, b (its own ports: locally the daemons share the host), then a failover")
	res, err := kubectl(mb, "apply", "-f", "-")
	fmt.Fprint(out, indent(res))
	if err != nil {
		return fmt.Errorf("kubectl apply mgr b: %w", err)
	}
	roleOf := func(ctx context.Context, id string) string {
		pods := &corev1.PodList{}
		if err := c.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{contract.LabelMgrID: id}); err != nil || len(pods.Items) == 0 {
			return ""
		}
		return pods.Items[0].Labels[contract.LabelMgrRole]
	}
	until := func(what string, cond func(context.Context) bool) error {
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			return cond(ctx), nil
		}); err != nil {
			return fmt.Errorf("%s: %w (logs in %s)", what, err, c.WorkDir)
		}
		return nil
	}
	// Which mgr is active is Ceph's choice (a module enable restarts the
	// active mgr, and the standby may take over): fail whichever it is.
	active, standby := "", ""
	if err := until("mgr b Ready, one mgr active and the other standing by", func(ctx context.Context) bool {
		d := &appsv1.Deployment{}
		if c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: contract.DeploymentName("b")}, d) != nil {
			return false
		}
		st, _ := mgrstatus.Of(d)
		for _, pair := range [][2]string{{"a", "b"}, {"b", "a"}} {
			if roleOf(ctx, pair[0]) == contract.RoleActive && roleOf(ctx, pair[1]) == contract.RoleStandby {
				active, standby = pair[0], pair[1]
			}
		}
		return st.Phase == mgrstatus.PhaseReady && active != ""
	}); err != nil {
		return err
	}
	show("the mgr pods and their roles", "get", "pods", "-n", ns, "-l", "app=rook-ceph-mgr", "-L", "mgr,mgr_role")
	fmt.Fprintf(out, "\n==> ceph mgr fail %s\n", active)
	if _, err := cc.Ceph(ctx, "mgr", "fail", active); err != nil {
		return err
	}
	start := time.Now()
	if err := until("mgr "+standby+" active", func(ctx context.Context) bool {
		return roleOf(ctx, standby) == contract.RoleActive && roleOf(ctx, active) == contract.RoleStandby
	}); err != nil {
		return err
	}
	fmt.Fprintf(out, "    mgr %s labelled active %s later\n", standby, time.Since(start).Round(100*time.Millisecond))
	show("the mgr pods and their roles", "get", "pods", "-n", ns, "-l", "app=rook-ceph-mgr", "-L", "mgr,mgr_role")
	show("the endpoints of Service rook-ceph-mgr (the active mgr's pod, on its own metrics port)", "get", "endpointslices", "-n", ns, "-l", "kubernetes.io/service-name="+contract.MetricsServiceName)
	return nil
}

var keyLine = regexp.MustCompile(`(?m)^(\s*key = ).*$`)

func redact(keyring string) string { return keyLine.ReplaceAllString(keyring, "${1}<redacted>") }

func decodeB64(s string) string {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return s
	}
	return string(b)
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
			for _, k := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "finalizers"} {
				delete(meta, k)
			}
			if anns, ok := meta["annotations"].(map[string]any); ok {
				for _, k := range []string{"kubectl.kubernetes.io/last-applied-configuration", "deployment.kubernetes.io/revision", contract.AnnotationBootstrapStatus} {
					delete(anns, k)
				}
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
	return udiff.ToUnified("applied", "stored", a, udiff.Lines(a, s), 2)
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") + "\n"
}

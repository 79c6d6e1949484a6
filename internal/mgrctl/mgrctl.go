// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package mgrctl is the mgrctl command: what the webhook would make of a mgr
// Deployment, before it is committed or applied. It adapts package inject
// (the webhook's own completion and judgement) to files, a terminal and,
// when asked, the cluster's policy and Ceph clusters.
package mgrctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aymanbagabas/go-udiff"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/bootstrap/uninstall"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/inject"
	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/version"
	"github.com/rook-mgr/mgr-webhook/webhook"
)

// release stops the controller and releases every mgr (uninstall.Job),
// with the caller's credentials; --dry-run only lists what it would change.
func (s *session) release(ctx context.Context) error {
	cfg, err := s.config()
	if err != nil {
		return err
	}
	cl, err := uninstall.Client(cfg)
	if err != nil {
		return err
	}
	job := uninstall.Job{Client: cl, Namespace: s.installNamespace, Deployment: contract.ControllerName, Wait: 2 * time.Minute, DryRun: s.dryRun}
	rep, err := job.Run(ctx)
	if rep.PodsLeft > 0 {
		fmt.Fprintf(s.stderr, "warning: %d pods of deploy/mgr-bootstrap in %s were still there after 2m\n", rep.PodsLeft, s.installNamespace)
	}
	if s.dryRun {
		if rep.Scaled {
			fmt.Fprintf(s.stdout, "would scale deployment %s/%s to 0 (dry run)\n", s.installNamespace, contract.ControllerName)
		}
		for _, m := range rep.LetGo {
			fmt.Fprintf(s.stdout, "would release deployment %s (dry run)\n", m)
		}
		if err == nil {
			fmt.Fprintf(s.stdout, "%d mgr Deployments would be released; nothing was changed\n", len(rep.LetGo))
		}
		return err
	}
	for _, m := range rep.LetGo {
		fmt.Fprintf(s.stdout, "released deployment %s (its cephx key stays in Ceph)\n", m)
	}
	if err == nil {
		fmt.Fprintf(s.stdout, "%d mgr Deployments released; deploy/mgr-bootstrap in %s is scaled to 0: remove the install now\n", len(rep.LetGo), s.installNamespace)
	}
	return err
}

// session is one command's flags, streams and cluster.
type session struct {
	kube                                                   *genericclioptions.ConfigFlags
	files                                                  []string
	recursive, allowEmpty, dryRun                          bool
	output, fsid, policyFile, policyName, installNamespace string
	// ns is the kubeconfig context's namespace, once read.
	ns             string
	stdin          io.Reader
	stdout, stderr io.Writer
	cfg            *rest.Config
	// status is the exit code of a command that ran to its end.
	status int
}

// config is the cluster's, read once through the kubeconfig flags; it also
// fills in the namespace of the kubeconfig's context.
func (s *session) config() (*rest.Config, error) {
	if s.cfg != nil {
		return s.cfg, nil
	}
	cfg, err := s.kube.ToRESTConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			err = errors.New("no kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config)")
		}
		return nil, unreachable(fmt.Errorf("no cluster to read (%w); offline, pass --fsid and --policy", err))
	}
	if s.namespace() == "" {
		if ns, _, err := s.kube.ToRawKubeConfigLoader().Namespace(); err == nil {
			s.ns = ns
		}
	}
	s.cfg = cfg
	return cfg, nil
}

// namespace is -n, else (once the kubeconfig was read) its context's.
func (s *session) namespace() string {
	if s.kube != nil && s.kube.Namespace != nil && *s.kube.Namespace != "" {
		return *s.kube.Namespace
	}
	return s.ns
}

// policy is the one the webhook would enforce: --policy; offline (--fsid)
// the built-in; else the cluster's MgrPolicy, or the built-in without one.
func (s *session) policy(ctx context.Context) (*mutate.Policy, string, error) {
	if s.policyFile != "" {
		data, err := os.ReadFile(s.policyFile)
		if err != nil {
			return nil, "", err
		}
		p, err := ParsePolicy(data)
		return p, s.policyFile, err
	}
	if s.fsid != "" {
		return mutate.DefaultPolicy(), "the built-in policy (offline; --policy names the site's)", nil
	}
	cfg, err := s.config()
	if err != nil {
		return nil, "", err
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, "", err
	}
	var mp v1alpha1.MgrPolicy
	if err := cl.Get(ctx, client.ObjectKey{Name: s.policyName}, &mp); apierrors.IsNotFound(err) {
		return mutate.DefaultPolicy(), "the built-in policy (no MgrPolicy " + s.policyName + ")", nil
	} else if err != nil {
		return nil, "", fmt.Errorf("reading MgrPolicy %s: %w", s.policyName, err)
	}
	p, errs := mutate.PolicyFromSpec(&mp.Spec, field.NewPath("spec"))
	if len(errs) > 0 {
		return nil, "", fmt.Errorf("MgrPolicy %s is invalid, the webhook keeps its last good policy (pass it with --policy): %w", s.policyName, errs.ToAggregate())
	}
	return p, fmt.Sprintf("MgrPolicy %s, generation %d", s.policyName, mp.Generation), nil
}

// ParsePolicy reads a policy file: kind Policy (the file the webhook's
// --policy takes) or a MgrPolicy object.
func ParsePolicy(data []byte) (*mutate.Policy, error) {
	var tm struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return nil, err
	}
	if tm.Kind != "MgrPolicy" {
		return mutate.ParsePolicy(data)
	}
	var mp v1alpha1.MgrPolicy
	if err := yaml.UnmarshalStrict(data, &mp); err != nil {
		return nil, fmt.Errorf("MgrPolicy: %w", err)
	}
	p, errs := mutate.PolicyFromSpec(&mp.Spec, field.NewPath("spec"))
	if len(errs) > 0 {
		return nil, fmt.Errorf("MgrPolicy: %w", errs.ToAggregate())
	}
	return p, nil
}

// clusters looks namespaces' Ceph clusters up as the webhook does (its own
// informers, once), or answers --fsid for every one.
func (s *session) clusters(ctx context.Context, namespaces []string) (func(string) (mutate.ClusterInfo, error), error) {
	if s.fsid != "" {
		return func(ns string) (mutate.ClusterInfo, error) {
			return mutate.ClusterInfo{Namespace: ns, FSID: s.fsid}, nil
		}, nil
	}
	cfg, err := s.config()
	if err != nil {
		return nil, err
	}
	c, err := webhook.NewClusterInfoCache(cfg, namespaces...)
	if err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	sync, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !c.WaitForSync(sync) {
		return nil, unreachable(errors.New("could not read the Ceph clusters' ConfigMap and Secret in 30 s"))
	}
	return c.Lookup, nil
}

// injector is set up for the namespaces of srcs' documents.
func (s *session) injector(ctx context.Context, srcs ...[]byte) (inject.Injector, string, error) {
	p, from, err := s.policy(ctx)
	if err != nil {
		return inject.Injector{}, "", err
	}
	from = fmt.Sprintf("%s (%s)", from, p.Hash())
	if s.output == "" {
		fmt.Fprintf(s.stderr, "policy: %s\n", from)
	}
	in := inject.Injector{Policy: p, Version: version.Get().Version, Namespace: s.namespace()}
	var namespaces []string
	for _, src := range srcs {
		for _, ns := range namespacesOf(src, s.namespace()) {
			if !slices.Contains(namespaces, ns) {
				namespaces = append(namespaces, ns)
			}
		}
	}
	in.Cluster, err = s.clusters(ctx, namespaces)
	return in, from, err
}

// namespacesOf lists the namespaces of src's documents (def for those
// without one).
func namespacesOf(src []byte, def string) []string {
	var ns []string
	for _, raw := range inject.Split(src) {
		var h struct {
			Metadata struct {
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if yaml.Unmarshal(raw, &h) != nil {
			continue
		}
		n := h.Metadata.Namespace
		if n == "" {
			n = def
		}
		if n != "" && !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	if len(ns) == 0 {
		ns = []string{"default"}
	}
	return ns
}

// source is one input: a file, or - for stdin.
type source struct {
	name string
	data []byte
}

// manifestExt are the file names a directory of -f is read for, as kubectl's.
var manifestExt = []string{".yaml", ".yml", ".json"}

// sources reads every -f: files, directories (their manifests; with -R
// their subdirectories' too) and - (stdin, once).
func (s *session) sources() ([]source, error) {
	if len(s.files) == 0 {
		return nil, usageError{errors.New("name the input with -f FILE, -f DIRECTORY or -f - (stdin)")}
	}
	var out []source
	stdin := false
	for _, f := range s.files {
		if f == "-" {
			if stdin {
				return nil, usageError{errors.New("-f - (stdin) given twice")}
			}
			stdin = true
			data, err := io.ReadAll(s.stdin)
			if err != nil {
				return nil, err
			}
			out = append(out, source{"-", data})
			continue
		}
		info, err := os.Stat(f)
		if err != nil {
			return nil, withCode(ExitUsage, err)
		}
		if !info.IsDir() {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, withCode(ExitUsage, err)
			}
			out = append(out, source{f, data})
			continue
		}
		n := len(out)
		err = filepath.WalkDir(f, func(path string, e fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case e.IsDir() && path != f && !s.recursive:
				return filepath.SkipDir
			case e.IsDir() || !slices.Contains(manifestExt, filepath.Ext(path)):
				return nil
			}
			data, err := os.ReadFile(path)
			out = append(out, source{path, data})
			return err
		})
		if err != nil {
			return nil, withCode(ExitUsage, err)
		}
		if len(out) == n {
			return nil, usageError{fmt.Errorf("directory %s holds no manifest (%s)%s", f, strings.Join(manifestExt, ", "), map[bool]string{false: "; -R reads its subdirectories", true: ""}[s.recursive])}
		}
	}
	return out, nil
}

// runFiles runs inject, validate or diff on every source.
func (s *session) runFiles(ctx context.Context, cmd string) error {
	srcs, err := s.sources()
	if err != nil {
		return err
	}
	datas := make([][]byte, len(srcs))
	for i, src := range srcs {
		datas[i] = src.data
	}
	in, from, err := s.injector(ctx, datas...)
	if err != nil {
		return err
	}
	results := Results{APIVersion: ResultsAPIVersion, Kind: "Results", Command: cmd, Policy: from, Items: []Result{}}
	var completed bytes.Buffer
	status := ExitOK
	for _, src := range srcs {
		out, docs, err := in.Inject(src.data)
		for _, d := range docs {
			results.Items = append(results.Items, resultOf(src.name, d))
			if s.output == "" {
				s.report(src.name, d, cmd == "validate")
			}
		}
		refused := slices.ContainsFunc(docs, func(d inject.Doc) bool { return len(d.Deny) > 0 })
		switch {
		case err != nil && refused:
			status = ExitRefused // each refusal reported, field by field
			continue
		case err != nil:
			return withCode(ExitUsage, fmt.Errorf("%s: %w", src.name, err))
		}
		switch cmd {
		case "inject":
			if completed.Len() > 0 && !bytes.HasSuffix(completed.Bytes(), []byte("\n")) {
				completed.WriteByte('\n')
			}
			if completed.Len() > 0 && !bytes.HasPrefix(bytes.TrimLeft(out, "\n"), []byte("---")) {
				completed.WriteString("---\n")
			}
			completed.Write(out)
		case "diff":
			if text := unified(src.data, out, src.name); text != "" {
				results.Diffs = append(results.Diffs, SourceDiff{Source: src.name, Diff: text})
				status = max(status, ExitRefused)
			}
		}
	}
	if len(results.Items) == 0 && cmd == "validate" && !s.allowEmpty {
		names := make([]string, len(srcs))
		for i, src := range srcs {
			names[i] = src.name
		}
		s.status = ExitRefused
		fmt.Fprintf(s.stderr, "no mgr Deployment (apps/v1 Deployment labelled %s=%s) in %s: nothing was judged (--allow-empty accepts that)\n", contract.LabelApp, contract.AppName, strings.Join(names, ", "))
		if s.output != "" {
			return write(s.stdout, s.output, results)
		}
		return nil
	}
	s.status = status
	switch {
	case s.output != "":
		return write(s.stdout, s.output, results)
	case cmd == "inject" && status == ExitOK:
		_, err := s.stdout.Write(completed.Bytes())
		return err
	case cmd == "diff":
		for _, d := range results.Diffs {
			if _, err := io.WriteString(s.stdout, d.Diff); err != nil {
				return err
			}
		}
	}
	return nil
}

// report says what became of one mgr on stderr (validate: stdout).
func (s *session) report(source string, d inject.Doc, verbose bool) {
	w := s.stderr
	if verbose {
		w = s.stdout
	}
	ref := d.Ref()
	if source != "-" && source != "" {
		ref = source + ": " + ref
	}
	switch {
	case d.Skipped != "":
		if verbose {
			fmt.Fprintf(w, "%s: not judged: %s\n", ref, d.Skipped)
		}
		return
	case len(d.Deny) > 0:
		fmt.Fprintf(w, "%s: refused:\n", ref)
		for _, e := range d.Deny {
			fmt.Fprintf(w, "  %s\n", e.Error())
		}
	case verbose:
		fmt.Fprintf(w, "%s: admitted\n", ref)
	}
	for _, m := range d.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", m)
	}
	for _, m := range d.Audits {
		fmt.Fprintf(w, "  audit: %s\n", m)
	}
}

// unified is a unified diff of a and b ("" when they are equal).
func unified(a, b []byte, name string) string {
	if bytes.Equal(a, b) {
		return ""
	}
	return udiff.Unified(name, name+" (as the webhook completes it)", string(a), string(b))
}

// liveDeployment reads deploy/NAME of the namespace (the kubeconfig
// context's, else default), with the clientset it read it by.
func (s *session) liveDeployment(ctx context.Context, ref string) (*appsv1.Deployment, kubernetes.Interface, error) {
	name, err := deploymentName(ref)
	if err != nil {
		return nil, nil, usageError{err}
	}
	cfg, err := s.config()
	if err != nil {
		return nil, nil, err
	}
	if s.namespace() == "" {
		s.ns = "default"
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	d, err := cs.AppsV1().Deployments(s.namespace()).Get(ctx, name, metav1.GetOptions{})
	return d, cs, err
}

// diffLive shows what the webhook would change in a live mgr Deployment on
// its next write (drift since it was completed).
func (s *session) diffLive(ctx context.Context, ref string) error {
	d, _, err := s.liveDeployment(ctx, ref)
	if err != nil {
		return err
	}
	live, err := manifest(d)
	if err != nil {
		return err
	}
	in, from, err := s.injector(ctx, live)
	if err != nil {
		return err
	}
	out, docs, err := in.Inject(live)
	results := Results{APIVersion: ResultsAPIVersion, Kind: "Results", Command: "diff", Policy: from, Items: []Result{}}
	for _, doc := range docs {
		results.Items = append(results.Items, resultOf(ref, doc))
		if s.output == "" {
			s.report("", doc, false)
			if doc.Skipped != "" {
				fmt.Fprintf(s.stderr, "%s is not judged: %s\n", ref, doc.Skipped)
			}
		}
	}
	switch {
	case len(docs) == 0:
		return withCode(ExitUsage, fmt.Errorf("%s in %s is not a mgr Deployment (label %s=%s)", ref, s.namespace(), contract.LabelApp, contract.AppName))
	case err != nil && len(docs[0].Deny) > 0:
		s.status = ExitRefused
	case err != nil:
		return err
	}
	if text := unified(live, out, ref); text != "" && err == nil {
		results.Diffs = append(results.Diffs, SourceDiff{Source: ref, Diff: text})
		s.status = ExitRefused
	}
	if s.output != "" {
		return write(s.stdout, s.output, results)
	}
	for _, d := range results.Diffs {
		if _, err := io.WriteString(s.stdout, d.Diff); err != nil {
			return err
		}
	}
	return nil
}

// manifest is a live Deployment as its writer would have written it: the
// fields the API server keeps for itself left out.
func manifest(d *appsv1.Deployment) ([]byte, error) {
	d = d.DeepCopy()
	d.ManagedFields, d.ResourceVersion, d.UID, d.Generation = nil, "", "", 0
	d.CreationTimestamp = metav1.Time{}
	d.Status = appsv1.DeploymentStatus{}
	delete(d.Annotations, "deployment.kubernetes.io/revision")
	d.APIVersion, d.Kind = "apps/v1", "Deployment"
	return inject.Render(d)
}

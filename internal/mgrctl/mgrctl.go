// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package mgrctl is the mgrctl command: what the webhook would make of a mgr
// Deployment, before it is committed or applied. It adapts package inject
// (the webhook's own completion and judgement) to files, a terminal and,
// when asked, the cluster's policy and Ceph clusters.
package mgrctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/aymanbagabas/go-udiff"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

const usage = `mgrctl: what the mgr webhook would make of a mgr Deployment.

  mgrctl inject -f FILE      complete every mgr Deployment of FILE (- for stdin) as the
                             webhook would; every other document comes back byte for byte
  mgrctl validate -f FILE    judge every mgr Deployment of FILE by the policy; exit 1 when
                             one would be refused
  mgrctl diff -f FILE        what the webhook would change in FILE; exit 1 when it would
  mgrctl diff deploy/NAME    what the webhook would change in a live mgr on its next write
  mgrctl check deploy/NAME   why the webhooks did or did not complete a live mgr: selectors,
                             exemptions, the Ceph cluster, the policy's verdict, drift, the
                             bootstrap phase, and whether the caBundle verifies the webhook
  mgrctl release             before removing the install with kubectl: stop the controller
                             (--install-namespace) and remove its finalizer from every mgr,
                             so that mgrs and their namespaces can be deleted without it
  mgrctl version

The Ceph cluster of a namespace (its fsid) and the policy come from the cluster
(--kubeconfig, $KUBECONFIG, ~/.kube/config: ConfigMap rook-ceph-config and MgrPolicy
--policy-name); offline, from --fsid and --policy (default: the built-in policy).
`

// Run runs mgrctl with args (without the program name); it returns the
// exit status: 0 fine, 1 a refusal or a difference, 2 an error.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// The informers a command starts end with it (Run is called in-process
	// by tests and tools, not only by main).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "version", "--version":
		fmt.Fprintln(stdout, version.Get().String("mgrctl"))
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "inject", "validate", "diff", "release", "check":
	default:
		fmt.Fprintf(stderr, "mgrctl: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	var o options
	fs := flag.NewFlagSet("mgrctl "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.register(fs)
	// Flags may come after the arguments, as with kubectl.
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		positional, args = append(positional, fs.Arg(0)), fs.Args()[1:]
	}
	s := &session{options: o, stdin: stdin, stdout: stdout, stderr: stderr}
	var status int
	var err error
	switch {
	case cmd == "release" && len(positional) == 0:
		err = s.release(ctx)
	case cmd == "check" && len(positional) == 1:
		status, err = s.checkLive(ctx, positional[0])
	case cmd == "check":
		err = errors.New("name one Deployment: mgrctl check deploy/NAME -n NAMESPACE")
	case cmd == "diff" && o.file == "" && len(positional) == 1:
		status, err = s.diffLive(ctx, positional[0])
	case len(positional) > 0:
		err = fmt.Errorf("unexpected arguments %q (files are named by -f)", positional)
	case o.file == "":
		err = errors.New("name a file with -f (- for stdin)")
	default:
		status, err = s.runFile(ctx, cmd)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mgrctl %s: %v\n", cmd, err)
		return 2
	}
	return status
}

type options struct {
	file, namespace, fsid, policyFile, policyName, kubeconfig string
	installNamespace                                          string
}

func (o *options) register(fs *flag.FlagSet) {
	for _, name := range []string{"f", "filename"} {
		fs.StringVar(&o.file, name, "", "the manifest file, - for stdin")
	}
	for _, name := range []string{"n", "namespace"} {
		fs.StringVar(&o.namespace, name, "", "the namespace of documents without one (default: the kubeconfig context's, offline none)")
	}
	fs.StringVar(&o.fsid, "fsid", "", "offline: the fsid of the Ceph cluster of every namespace (no cluster is read)")
	fs.StringVar(&o.policyFile, "policy", "", "a policy file (kind Policy, or a MgrPolicy object) instead of the cluster's MgrPolicy")
	fs.StringVar(&o.policyName, "policy-name", "default", "the cluster's MgrPolicy the webhook enforces")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "the kubeconfig (default $KUBECONFIG, ~/.kube/config)")
	fs.StringVar(&o.installNamespace, "install-namespace", contract.InstallNamespace, "release: the namespace of the install (its Deployment mgr-bootstrap)")
}

// release stops the controller and releases every mgr (uninstall.Job),
// with the caller's credentials.
func (s *session) release(ctx context.Context) error {
	cfg, err := s.config()
	if err != nil {
		return err
	}
	cl, err := uninstall.Client(cfg)
	if err != nil {
		return err
	}
	rep, err := uninstall.Job{Client: cl, Namespace: s.installNamespace, Deployment: contract.ControllerName, Wait: 2 * time.Minute}.Run(ctx)
	if rep.PodsLeft > 0 {
		fmt.Fprintf(s.stderr, "warning: %d pods of deploy/mgr-bootstrap in %s were still there after 2m\n", rep.PodsLeft, s.installNamespace)
	}
	for _, m := range rep.LetGo {
		fmt.Fprintf(s.stdout, "released deployment %s (its cephx key stays in Ceph)\n", m)
	}
	if err == nil {
		fmt.Fprintf(s.stdout, "%d mgr Deployments released; deploy/mgr-bootstrap in %s is scaled to 0: remove the install now\n", len(rep.LetGo), s.installNamespace)
	}
	return err
}

type session struct {
	options
	stdin          io.Reader
	stdout, stderr io.Writer
	cfg            *rest.Config
}

// config is the cluster's, read once; it also fills in the namespace of
// the kubeconfig's context.
func (s *session) config() (*rest.Config, error) {
	if s.cfg != nil {
		return s.cfg, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = s.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to read (%w); offline, pass --fsid and --policy", err)
	}
	if s.namespace == "" {
		if ns, _, err := cc.Namespace(); err == nil {
			s.namespace = ns
		}
	}
	s.cfg = cfg
	return cfg, nil
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
		return nil, errors.New("could not read the Ceph clusters' ConfigMap and Secret in 30 s")
	}
	return c.Lookup, nil
}

// injector is set up for src's mgr documents.
func (s *session) injector(ctx context.Context, src []byte) (inject.Injector, error) {
	p, from, err := s.policy(ctx)
	if err != nil {
		return inject.Injector{}, err
	}
	fmt.Fprintf(s.stderr, "policy: %s (%s)\n", from, p.Hash())
	in := inject.Injector{Policy: p, Version: version.Get().Version, Namespace: s.namespace}
	in.Cluster, err = s.clusters(ctx, namespacesOf(src, s.namespace))
	return in, err
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

func (s *session) read() ([]byte, error) {
	if s.file == "-" {
		return io.ReadAll(s.stdin)
	}
	return os.ReadFile(s.file)
}

// runFile runs inject, validate or diff on the file.
func (s *session) runFile(ctx context.Context, cmd string) (int, error) {
	src, err := s.read()
	if err != nil {
		return 2, err
	}
	in, err := s.injector(ctx, src)
	if err != nil {
		return 2, err
	}
	out, docs, err := in.Inject(src)
	for _, d := range docs {
		s.report(d, cmd == "validate")
	}
	refused := slices.ContainsFunc(docs, func(d inject.Doc) bool { return len(d.Deny) > 0 })
	switch {
	case err != nil && refused && cmd != "inject":
		return 1, nil // each refusal reported, field by field
	case err != nil:
		return 2, err
	}
	switch cmd {
	case "inject":
		_, err := s.stdout.Write(out)
		return 0, err
	case "diff":
		return s.diff(src, out, s.file)
	}
	return 0, nil
}

// report says what became of one mgr on stderr (validate: stdout).
func (s *session) report(d inject.Doc, verbose bool) {
	w := s.stderr
	if verbose {
		w = s.stdout
	}
	switch {
	case d.Skipped != "":
		if verbose {
			fmt.Fprintf(w, "%s: not judged: %s\n", d.Ref(), d.Skipped)
		}
		return
	case len(d.Deny) > 0:
		fmt.Fprintf(w, "%s: refused:\n", d.Ref())
		for _, e := range d.Deny {
			fmt.Fprintf(w, "  %s\n", e.Error())
		}
	case verbose:
		fmt.Fprintf(w, "%s: admitted\n", d.Ref())
	}
	for _, m := range d.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", m)
	}
	for _, m := range d.Audits {
		fmt.Fprintf(w, "  audit: %s\n", m)
	}
}

// diff writes a unified diff of a and b; 1 when they differ.
func (s *session) diff(a, b []byte, name string) (int, error) {
	if string(a) == string(b) {
		return 0, nil
	}
	text, err := udiff.ToUnified(name, name+" (as the webhook completes it)", string(a), udiff.Lines(string(a), string(b)), 3)
	if err != nil {
		return 2, err
	}
	_, err = io.WriteString(s.stdout, text)
	return 1, err
}

// liveDeployment reads deploy/NAME of the namespace (the kubeconfig
// context's, else default), with the clientset it read it by.
func (s *session) liveDeployment(ctx context.Context, ref string) (*appsv1.Deployment, kubernetes.Interface, error) {
	name, err := deploymentName(ref)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := s.config()
	if err != nil {
		return nil, nil, err
	}
	if s.namespace == "" {
		s.namespace = "default"
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	d, err := cs.AppsV1().Deployments(s.namespace).Get(ctx, name, metav1.GetOptions{})
	return d, cs, err
}

// diffLive shows what the webhook would change in a live mgr Deployment on
// its next write (drift since it was completed).
func (s *session) diffLive(ctx context.Context, ref string) (int, error) {
	d, _, err := s.liveDeployment(ctx, ref)
	if err != nil {
		return 2, err
	}
	live, err := manifest(d)
	if err != nil {
		return 2, err
	}
	in, err := s.injector(ctx, live)
	if err != nil {
		return 2, err
	}
	out, docs, err := in.Inject(live)
	for _, doc := range docs {
		s.report(doc, false)
		if doc.Skipped != "" {
			fmt.Fprintf(s.stderr, "%s is not judged: %s\n", ref, doc.Skipped)
		}
	}
	if len(docs) == 0 {
		return 2, fmt.Errorf("%s in %s is not a mgr Deployment (label app=rook-ceph-mgr)", ref, s.namespace)
	}
	if err != nil {
		return 2, err
	}
	return s.diff(live, out, ref)
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

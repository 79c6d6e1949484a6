// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mgrctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/version"
)

// The exit codes, one table for every command (docs/mgrctl.md).
const (
	// ExitOK: admitted, complete, no difference, every check passed.
	ExitOK = 0
	// ExitRefused: the policy refuses a mgr, diff found a difference, a
	// check failed, or validate was given no mgr (without --allow-empty).
	ExitRefused = 1
	// ExitUsage: the command line or its input is wrong (an unknown command
	// or flag, no -f, a file that cannot be read or is not YAML, an object
	// that does not exist).
	ExitUsage = 2
	// ExitUnreachable: the cluster could not be reached or refused the
	// caller's credentials (no kubeconfig, a connection that fails, 401/403,
	// an API call that timed out).
	ExitUnreachable = 3
)

// exitError carries the exit code of an error.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// withCode gives err the exit code code (nil stays nil).
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return exitError{code, err}
}

// unreachable marks err as the cluster's not answering.
func unreachable(err error) error { return withCode(ExitUnreachable, err) }

// exitCode classifies err by the table above.
func exitCode(err error) int {
	var e exitError
	var urlErr *url.Error
	var netErr net.Error
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &e):
		return e.code
	case apierrors.IsUnauthorized(err), apierrors.IsForbidden(err), apierrors.IsTimeout(err),
		apierrors.IsServerTimeout(err), apierrors.IsServiceUnavailable(err),
		errors.As(err, &urlErr), errors.As(err, &netErr), errors.Is(err, context.DeadlineExceeded):
		return ExitUnreachable
	}
	return ExitUsage
}

// NameFor is the command's name as invoked: "kubectl mgr" for the kubectl
// plugin binary kubectl-mgr, else the program's name.
func NameFor(program string) string {
	base := filepath.Base(program)
	if base == "kubectl-mgr" {
		return "kubectl mgr"
	}
	return base
}

// Main runs the command as program os.Args[0] and exits with its code.
func Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := Execute(ctx, NameFor(os.Args[0]), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Run runs mgrctl with args (without the program name) and returns its exit
// code (ExitOK, ExitRefused, ExitUsage, ExitUnreachable).
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return Execute(ctx, "mgrctl", args, stdin, stdout, stderr)
}

// Execute is Run under the name the user typed.
func Execute(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// The informers a command starts end with it (tests and tools call it
	// in-process, not only main).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &session{stdin: stdin, stdout: stdout, stderr: stderr}
	root := NewCommand(name, s)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return s.status
	}
	var e exitError
	if !errors.As(err, &e) && cmd != nil && isUsage(err) {
		// cobra's own: an unknown command or flag, a wrong number of arguments.
		fmt.Fprintf(stderr, "%s: %v\nSee '%s --help'.\n", name, err, cmd.CommandPath())
		return ExitUsage
	}
	prefix := name
	if cmd != nil {
		prefix = cmd.CommandPath()
	}
	fmt.Fprintf(stderr, "%s: %v\n", prefix, err)
	return exitCode(err)
}

// usageError is an error of the command line, found before a command ran.
type usageError struct{ error }

func isUsage(err error) bool {
	var u usageError
	if errors.As(err, &u) {
		return true
	}
	// cobra reports these as plain errors.
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument", "accepts ", "requires "} {
		if strings.HasPrefix(err.Error(), p) {
			return true
		}
	}
	return false
}

// NewCommand is the command tree of mgrctl (kubectl mgr), run in s.
func NewCommand(name string, s *session) *cobra.Command {
	root := &cobra.Command{
		// kubectl's plugin convention: the binary kubectl-mgr, shown as
		// "kubectl mgr" in help and completion.
		Use:         strings.ReplaceAll(name, " ", "-"),
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: name},
		Short:       "What the mgr webhook would make of a Ceph mgr Deployment",
		Long: `What the mgr webhook would make of a Ceph mgr Deployment, before it is
committed or applied, and why a live mgr is or is not completed.

The Ceph cluster of a namespace (its fsid) and the policy come from the
cluster (the kubeconfig flags below: ConfigMap rook-ceph-config and MgrPolicy
--policy-name); offline, from --fsid and --policy (default: the built-in
policy).

Exit codes, for every command: 0 fine; 1 refused, different, a check failed,
or no mgr to validate; 2 a wrong command line or unreadable input; 3 the
cluster could not be reached or refused the credentials.`,
		Version:       version.Get().String(name),
		SilenceErrors: true,
		SilenceUsage:  true,
		// -o is checked once, before any command reads input or the cluster.
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if s.output != "" && s.output != "yaml" && s.output != "json" {
				return usageError{fmt.Errorf("unknown output format %q: yaml or json", s.output)}
			}
			return nil
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })

	s.kube = genericclioptions.NewConfigFlags(true)
	s.kube.AddFlags(root.PersistentFlags())
	pf := root.PersistentFlags()
	pf.StringVar(&s.fsid, "fsid", "", "offline: the fsid of the Ceph cluster of every namespace (no cluster is read)")
	pf.StringVar(&s.policyFile, "policy", "", "a policy file (kind Policy, or a MgrPolicy object) instead of the cluster's MgrPolicy")
	pf.StringVar(&s.policyName, "policy-name", "default", "the cluster's MgrPolicy the webhook enforces")
	pf.StringVar(&s.installNamespace, "install-namespace", contract.InstallNamespace, "the namespace of the install (its Deployment mgr-bootstrap and the status seal's Secret)")

	fileFlags := func(c *cobra.Command) {
		c.Flags().StringArrayVarP(&s.files, "filename", "f", nil, "a manifest file, a directory of them (.yaml, .yml, .json), or - for stdin; repeatable")
		c.Flags().BoolVarP(&s.recursive, "recursive", "R", false, "read the directories of -f recursively")
		_ = c.MarkFlagFilename("filename", "yaml", "yml", "json")
	}
	outputFlag := func(c *cobra.Command, what string) {
		c.Flags().StringVarP(&s.output, "output", "o", "", what+"; yaml or json: the results as a document of kind Results (apiVersion "+ResultsAPIVersion+")")
		_ = c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"yaml", "json"}, cobra.ShellCompDirectiveNoFileComp))
	}

	inject := &cobra.Command{
		Use:   "inject -f FILE",
		Short: "Complete every mgr Deployment of the input as the webhook would",
		Long: `Complete every mgr Deployment of the input as the webhook would. Every other
document comes back byte for byte; a mgr document keeps its comments and key
order, with only what completion adds or changes written anew. A mgr the
policy refuses is reported and the command exits 1, writing nothing.`,
		Example: "  " + name + " inject -f mgr.yaml --fsid $(kubectl -n rook-ceph get cm rook-ceph-config -o jsonpath='{.data.fsid}') > completed.yaml",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return s.runFiles(cmd.Context(), "inject") },
	}
	fileFlags(inject)
	outputFlag(inject, "default: the completed documents")

	validate := &cobra.Command{
		Use:   "validate -f FILE",
		Short: "Judge every mgr Deployment of the input by the policy; exit 1 when one would be refused",
		Long: `Judge every mgr Deployment of the input by the policy, field by field. Exit 1
when one would be refused, or when the input holds no mgr Deployment (a
mistyped label or kind; --allow-empty accepts that).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return s.runFiles(cmd.Context(), "validate") },
	}
	fileFlags(validate)
	outputFlag(validate, "default: one line per mgr")
	validate.Flags().BoolVar(&s.allowEmpty, "allow-empty", false, "exit 0 when the input holds no mgr Deployment")

	diff := &cobra.Command{
		Use:   "diff (-f FILE | deploy/NAME)",
		Short: "What the webhook would change in the input, or in a live mgr on its next write; exit 1 when it would",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && len(s.files) > 0:
				return usageError{errors.New("name either files (-f) or one live Deployment, not both")}
			case len(args) == 1:
				return s.diffLive(cmd.Context(), args[0])
			}
			return s.runFiles(cmd.Context(), "diff")
		},
	}
	fileFlags(diff)
	outputFlag(diff, "default: a unified diff")

	check := &cobra.Command{
		Use:   "check deploy/NAME",
		Short: "Why the webhooks did or did not complete a live mgr; exit 1 when a check fails",
		Long: `Why the webhooks did or did not complete a live mgr: the configurations'
selectors and conditions, the policy's exemptions, the Ceph cluster, the
policy's verdict, drift, the bootstrap phase (only when the controller sealed
it), whether the caBundle verifies the certificate the webhook serves, and
whether the API server can call the webhook. Exit 1 when a check fails.`,
		Args: exactlyOne("name one Deployment: check deploy/NAME -n NAMESPACE"),
		RunE: func(cmd *cobra.Command, args []string) error { return s.checkLive(cmd.Context(), args[0]) },
	}
	check.Flags().StringVarP(&s.output, "output", "o", "", "default: one line per check; yaml or json: a document of kind CheckResult (apiVersion "+ResultsAPIVersion+")")
	_ = check.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"yaml", "json"}, cobra.ShellCompDirectiveNoFileComp))

	release := &cobra.Command{
		Use:   "release",
		Short: "Before removing the install with kubectl: stop the controller and let every mgr go",
		Long: `Before removing the install with kubectl: stop the controller (scale deploy/
mgr-bootstrap of --install-namespace to 0) and remove its finalizer from
every mgr Deployment, so that mgrs and their namespaces can be deleted
without it. Cephx keys stay in Ceph; keyrings, Services and the mgrs stay.
--dry-run lists what it would change and changes nothing (the API server
judges each write as a server-side dry run).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return s.release(cmd.Context()) },
	}
	release.Flags().BoolVar(&s.dryRun, "dry-run", false, "list what would change; change nothing")

	versionCmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version.Get().String(name))
			return err
		},
	}
	root.AddCommand(inject, validate, diff, check, release, versionCmd)
	for _, c := range root.Commands() {
		c.SilenceErrors, c.SilenceUsage = true, true
	}
	return root
}

// exactlyOne requires one argument, saying how to give it.
func exactlyOne(hint string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageError{errors.New(hint)}
		}
		return nil
	}
}

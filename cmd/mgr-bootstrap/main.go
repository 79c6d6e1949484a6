// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Command mgr-bootstrap runs the bootstrap controller for Ceph mgr
// Deployments: keyring Secret, Services and mgr modules.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/bootstrap/uninstall"
	"github.com/rook-mgr/mgr-webhook/cmd/internal/preamble"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/securemetrics"
	"github.com/rook-mgr/mgr-webhook/policy"
)

// options are mgr-bootstrap's flags: the controller's own (bootstrap.Options)
// and how it runs.
type options struct {
	bootstrap.Options
	leaderElect                  bool
	leaderElectionNamespace      string
	probeAddr                    string
	metrics                      securemetrics.Flags
	cephBinary, cephPython       string
	modules, caps                string
	policyFile, adopt, choices   string
	policyName, podName          string
	namespaces, monNetworks      string
	cephTimeout, connectTimeout  time.Duration
	statTimeout                  time.Duration
	leaseDuration, renewDeadline time.Duration
	retryPeriod                  time.Duration
	maxConcurrent                int
	letMgrsGo                    bool
	controllerDeployment         string
	preamble                     preamble.Flags
	// set are the flags given on the command line.
	set map[string]bool
}

// BindFlags registers the flags on fs, each defaulting to o's value.
func (o *options) BindFlags(fs *flag.FlagSet) {
	// --kubeconfig is registered by controller-runtime (in-cluster config when unset).
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader so that only one replica reconciles")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (the pod's namespace in-cluster)")
	// A standby takes over a killed leader after about the lease duration; a
	// leader that cannot renew within the deadline (an API server outage) exits.
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a standby waits before taking over a leader that stopped renewing")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up leading and exits")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often replicas try to acquire or renew the lease")
	o.metrics.Register(fs)
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.StringVar(&o.cephBinary, "ceph-binary", "ceph", "the ceph CLI")
	fs.DurationVar(&o.cephTimeout, "ceph-timeout", ceph.DefaultTimeout, "deadline of each ceph call (the CLI's connect timeout does not bound a stuck mgr)")
	fs.DurationVar(&o.connectTimeout, "ceph-connect-timeout", ceph.DefaultConnectTimeout, "the ceph CLI's --connect-timeout")
	fs.DurationVar(&o.statTimeout, "mgr-stat-timeout", ceph.DefaultStatTimeout, "deadline of the role watcher's read of a cluster's mgr map (connection included)")
	fs.StringVar(&o.cephPython, "ceph-python", "", "the Python interpreter with Ceph's rados binding that keeps one connection per cluster for the mgr map reads (default: the one --ceph-binary runs on)")
	fs.IntVar(&o.RoleWorkers, "mgr-role-workers", o.RoleWorkers, "how many clusters' mgr maps are read at once")
	fs.StringVar(&o.modules, "modules", "", "mgr modules to enable, comma-separated (a Deployment may choose others among --module-choices with annotation mgr.ceph.rook.io/modules); the policy's modules when unset")
	fs.StringVar(&o.choices, "module-choices", "", "modules a Deployment's annotation mgr.ceph.rook.io/modules may name, comma-separated; an annotation naming others, or any while this is empty, is ignored; the policy's moduleChoices when unset")
	fs.StringVar(&o.policyFile, "policy", "", "the webhook's policy file; its modules, moduleChoices and adoptExistingKeys are the defaults of --modules, --module-choices and --adopt-existing-keys (with --policy-name: until the MgrPolicy is read)")
	fs.StringVar(&o.policyName, "policy-name", "", "the MgrPolicy whose modules, moduleChoices and adoptExistingKeys are in force where no flag sets them, watched live; this controller writes its conditions and Events (the release manifests: default)")
	fs.DurationVar(&o.AuditInterval, "audit-interval", o.AuditInterval, "how often the leader judges every managed mgr against the policy in force (and at each change of it), reported per namespace in an OpenReports Report, gauges and Events; 0: never")
	fs.IntVar(&o.AuditReportLimit, "audit-report-limit", o.AuditReportLimit, "the most results a namespace's Report holds (failures first; its summary counts them all)")
	fs.StringVar(&o.podName, "pod-name", os.Getenv("POD_NAME"), "this replica's Pod, its entry in the MgrPolicy's status.byPod (default $POD_NAME)")
	fs.StringVar(&o.caps, "caps", "mgr-profile", `caps of a mgr's cephx key: "mgr-profile" (mon 'allow profile mgr', mds/osd 'allow *', Rook's) or "allow-all" (the seed's 'allow *')`)
	fs.StringVar(&o.OrchestratorBackend, "orchestrator-backend", o.OrchestratorBackend, "orchestrator backend set once its module is on; empty to skip")
	fs.DurationVar(&o.ModuleTimeout, "module-timeout", o.ModuleTimeout, "how long one module step is retried while the mgr restarts")
	fs.DurationVar(&o.FinalizerTimeout, "finalizer-timeout", o.FinalizerTimeout, "how long a deleted mgr waits for its cephx key to be removed before letting go")
	fs.DurationVar(&o.CephRetryMax, "ceph-retry-max", o.CephRetryMax, "the longest wait between attempts while a Ceph cluster does not answer (from 1s, doubling)")
	fs.DurationVar(&o.RoleInterval, "mgr-role-interval", o.RoleInterval, "how often each cluster with two or more mgrs is asked which mgr is active (`ceph mgr stat`), to label the pods mgr_role")
	fs.DurationVar(&o.ReleaseInterval, "ceph-release-interval", o.ReleaseInterval, "how often each cluster's release floors, releases, health and standby mgrs are read into its CephRelease (three mon reads), which the webhook's release guard judges by, and the policy's moduleOptions checked for hand edits (one more read, only while it names options); 0: never")
	fs.DurationVar(&o.ModuleFailoverInterval, "module-failover-interval", o.ModuleFailoverInterval, "when set (e.g. 10m), fail a cluster's active mgr over to a standby when a mgr module this controller turned on failed on it (health check MGR_MODULE_ERROR), at most once per this interval; read with the CephRelease, so never while --ceph-release-interval is 0; 0: never")
	fs.IntVar(&o.maxConcurrent, "max-concurrent-reconciles", 8, "mgr Deployments reconciled at once")
	fs.StringVar(&o.adopt, "adopt-existing-keys", "", `namespaces (comma-separated, "*" for all) where a mgr.<id> key that existed before the controller made one is adopted (re-capped, removed with the Deployment); the policy's adoptExistingKeys when unset`)
	fs.StringVar(&o.monNetworks, "mon-networks", "", "networks (CIDRs, comma-separated) a cluster's mon_host may name: a mon address outside them is refused, with no ceph call (an editor who may write rook-ceph-config cannot point the controller elsewhere); empty: any address")
	fs.StringVar(&o.namespaces, "namespaces", "", "the Ceph namespaces to reconcile, comma-separated (a namespaced install: the controller watches only these, and its RBAC may be RoleBindings in them); empty: every namespace")
	fs.StringVar(&o.Namespace, "namespace", "", "the controller's own namespace, where Secret "+mgrstatus.KeySecretName+" seals its status (default: the pod's namespace in-cluster, else --leader-election-namespace, else "+o.Namespace+")")
	fs.BoolVar(&o.letMgrsGo, "release-mgrs", false, "before an uninstall (the chart's pre-delete hook runs this): scale this controller's Deployment --release-deployment to 0, wait for its pods to be gone, remove its finalizer from every mgr Deployment of --namespaces, and exit; keys, keyrings and Services stay")
	fs.StringVar(&o.controllerDeployment, "release-deployment", contract.ControllerName, "with --release-mgrs: the controller's Deployment, in --namespace")
	o.preamble.BindFlags(fs)
}

func main() {
	o := options{Options: bootstrap.DefaultOptions(), set: map[string]bool{}}
	o.BindFlags(flag.CommandLine)
	flag.Parse()
	if !o.preamble.Start(contract.ControllerName, os.Stdout) {
		return
	}
	flag.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	run, name := run, contract.ControllerName
	if o.letMgrsGo {
		run, name = letMgrsGo, name+" --release-mgrs"
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// run starts the controller and returns when it stops.
func run(o options) error {
	caps, err := contract.CapsNamed(o.caps)
	if err != nil {
		return err
	}
	o.Caps = caps
	policies, err := policy.FromFile(o.policyFile)
	if err != nil {
		return err
	}
	// The policy in force (the file's or the built-in one, then the
	// MgrPolicy's when --policy-name names one) gives what no flag sets; a
	// flag given, even empty, overrides it. The audit judges by all of it.
	o.Policy, o.PolicyName, o.Pod = policies, o.policyName, o.podName
	o.Modules = flagList(o.set["modules"], contract.SplitList(o.modules))
	o.Namespaces = contract.SplitList(o.namespaces)
	o.ModuleChoices = flagList(o.set["module-choices"], contract.SplitList(o.choices))
	o.AdoptExistingKeys = flagList(o.set["adopt-existing-keys"], contract.SplitList(o.adopt))
	if o.MonNetworks, err = ceph.ParseNetworks(contract.SplitList(o.monNetworks)); err != nil {
		return err
	}

	o.Namespace = ownNamespace(o.Namespace, o.leaderElectionNamespace)
	if o.Namespace != "" && slices.Contains(contract.SplitList(o.namespaces), o.Namespace) {
		// RoleBindings there would let this controller read the webhook's CA key.
		return fmt.Errorf("--namespaces lists %s, the controller's own namespace, which holds the webhook's certificates: run Ceph in another namespace, or install the controller in another", o.Namespace)
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         bootstrap.CacheOptions(contract.SplitList(o.namespaces)...),
		Metrics:                       o.metrics.Options(),
		HealthProbeBindAddress:        o.probeAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              contract.ControllerName + ".mgr.ceph.rook.io",
		LeaderElectionNamespace:       o.leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.leaseDuration,
		RenewDeadline:                 &o.renewDeadline,
		RetryPeriod:                   &o.retryPeriod,
	})
	if err != nil {
		return err
	}
	runner := ceph.NewRunner(context.Background(), ceph.RunnerOptions{Binary: o.cephBinary, Python: o.cephPython,
		Timeout: o.cephTimeout, ConnectTimeout: o.connectTimeout, StatTimeout: o.statTimeout}, ctrl.Log)
	defer runner.Close()
	if err := bootstrap.Setup(mgr, o.Options, runner, o.maxConcurrent); err != nil {
		return err
	}
	modules, choices, _ := o.InForce()
	ctrl.Log.Info("starting mgr-bootstrap", "policy", o.Policy.InForce().Source, "modules", modules, "moduleChoices", choices, "leaderElect", o.leaderElect, "namespaces", contract.SplitList(o.namespaces))
	return mgr.Start(ctrl.SetupSignalHandler())
}

// letMgrsGo runs uninstall.Job as the flags say (--release-mgrs).
func letMgrsGo(o options) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	cl, err := uninstall.Client(cfg)
	if err != nil {
		return err
	}
	r := uninstall.Job{Client: cl, Namespace: ownNamespace(o.Namespace, o.leaderElectionNamespace), Deployment: o.controllerDeployment,
		Namespaces: contract.SplitList(o.namespaces), Wait: 2 * time.Minute}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	rep, err := r.Run(ctx)
	ctrl.Log.Info("released the mgr Deployments: their cephx keys stay in Ceph", "released", rep.LetGo, "controllerPodsLeft", rep.PodsLeft)
	return err
}

// flagList is a list flag's value when the flag was given (empty, not nil,
// when given empty), else nil: the policy's.
func flagList(given bool, v []string) []string {
	if !given {
		return nil
	}
	if v == nil {
		return []string{}
	}
	return v
}

// ownNamespace is the flag's value, else the pod's namespace in-cluster,
// else the leader election's, else the default.
func ownNamespace(flagValue, leaderElection string) string {
	if flagValue != "" {
		return flagValue
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b))
	}
	if leaderElection != "" {
		return leaderElection
	}
	return bootstrap.DefaultOptions().Namespace
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Command mgr-bootstrap runs the bootstrap controller for Ceph mgr
// Deployments: keyring Secret, Services and mgr modules.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/securemetrics"
	"github.com/rook-mgr/mgr-webhook/policy"
	"github.com/rook-mgr/mgr-webhook/version"
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
	release                      bool
	releaseDeployment            string
	// set are the flags given on the command line.
	set map[string]bool
}

func main() {
	o := options{Options: bootstrap.DefaultOptions(), set: map[string]bool{}}
	// --kubeconfig is registered by controller-runtime (in-cluster config when unset).
	flag.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader so that only one replica reconciles")
	flag.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (the pod's namespace in-cluster)")
	// A standby takes over a killed leader after about the lease duration; a
	// leader that cannot renew within the deadline (an API server outage) exits.
	flag.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a standby waits before taking over a leader that stopped renewing")
	flag.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up leading and exits")
	flag.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often replicas try to acquire or renew the lease")
	o.metrics.Register(flag.CommandLine)
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	flag.StringVar(&o.cephBinary, "ceph-binary", "ceph", "the ceph CLI")
	flag.DurationVar(&o.cephTimeout, "ceph-timeout", ceph.DefaultTimeout, "deadline of each ceph call (the CLI's connect timeout does not bound a stuck mgr)")
	flag.DurationVar(&o.connectTimeout, "ceph-connect-timeout", ceph.DefaultConnectTimeout, "the ceph CLI's --connect-timeout")
	flag.DurationVar(&o.statTimeout, "mgr-stat-timeout", ceph.DefaultStatTimeout, "deadline of the role watcher's read of a cluster's mgr map (connection included)")
	flag.StringVar(&o.cephPython, "ceph-python", "", "the Python interpreter with Ceph's rados binding that keeps one connection per cluster for the mgr map reads (default: the one --ceph-binary runs on)")
	flag.IntVar(&o.RoleWorkers, "mgr-role-workers", o.RoleWorkers, "how many clusters' mgr maps are read at once")
	flag.StringVar(&o.modules, "modules", "", "mgr modules to enable, comma-separated (a Deployment may choose others among --module-choices with annotation mgr.ceph.rook.io/modules); the policy's modules when unset")
	flag.StringVar(&o.choices, "module-choices", "", "modules a Deployment's annotation mgr.ceph.rook.io/modules may name, comma-separated; an annotation naming others, or any while this is empty, is ignored; the policy's moduleChoices when unset")
	flag.StringVar(&o.policyFile, "policy", "", "the webhook's policy file; its modules, moduleChoices and adoptExistingKeys are the defaults of --modules, --module-choices and --adopt-existing-keys (with --policy-name: until the MgrPolicy is read)")
	flag.StringVar(&o.policyName, "policy-name", "", "the MgrPolicy whose modules, moduleChoices and adoptExistingKeys are in force where no flag sets them, watched live; this controller writes its conditions and Events (the release manifests: default)")
	flag.DurationVar(&o.AuditInterval, "audit-interval", o.AuditInterval, "how often the leader judges every managed mgr against the policy in force (and at each change of it), reported per namespace in an OpenReports Report, gauges and Events; 0: never")
	flag.IntVar(&o.AuditReportLimit, "audit-report-limit", o.AuditReportLimit, "the most results a namespace's Report holds (failures first; its summary counts them all)")
	flag.StringVar(&o.podName, "pod-name", os.Getenv("POD_NAME"), "this replica's Pod, its entry in the MgrPolicy's status.byPod (default $POD_NAME)")
	flag.StringVar(&o.caps, "caps", "mgr-profile", `caps of a mgr's cephx key: "mgr-profile" (mon 'allow profile mgr', mds/osd 'allow *', Rook's) or "allow-all" (the seed's 'allow *')`)
	flag.StringVar(&o.OrchestratorBackend, "orchestrator-backend", o.OrchestratorBackend, "orchestrator backend set once its module is on; empty to skip")
	flag.DurationVar(&o.ModuleTimeout, "module-timeout", o.ModuleTimeout, "how long one module step is retried while the mgr restarts")
	flag.DurationVar(&o.FinalizerTimeout, "finalizer-timeout", o.FinalizerTimeout, "how long a deleted mgr waits for its cephx key to be removed before letting go")
	flag.DurationVar(&o.CephRetryMax, "ceph-retry-max", o.CephRetryMax, "the longest wait between attempts while a Ceph cluster does not answer (from 1s, doubling)")
	flag.DurationVar(&o.RoleInterval, "mgr-role-interval", o.RoleInterval, "how often each cluster with two or more mgrs is asked which mgr is active (`ceph mgr stat`), to label the pods mgr_role")
	flag.IntVar(&o.maxConcurrent, "max-concurrent-reconciles", 8, "mgr Deployments reconciled at once")
	flag.StringVar(&o.adopt, "adopt-existing-keys", "", `namespaces (comma-separated, "*" for all) where a mgr.<id> key that existed before the controller made one is adopted (re-capped, removed with the Deployment); the policy's adoptExistingKeys when unset`)
	flag.StringVar(&o.monNetworks, "mon-networks", "", "networks (CIDRs, comma-separated) a cluster's mon_host may name: a mon address outside them is refused, with no ceph call (an editor who may write rook-ceph-config cannot point the controller elsewhere); empty: any address")
	flag.StringVar(&o.namespaces, "namespaces", "", "the Ceph namespaces to reconcile, comma-separated (a namespaced install: the controller watches only these, and its RBAC may be RoleBindings in them); empty: every namespace")
	flag.StringVar(&o.Namespace, "namespace", "", "the controller's own namespace, where Secret "+bootstrap.StatusKeySecretName+" seals its status (default: the pod's namespace in-cluster, else --leader-election-namespace, else "+o.Namespace+")")
	flag.BoolVar(&o.release, "release-mgrs", false, "before an uninstall (the chart's pre-delete hook runs this): scale this controller's Deployment --release-deployment to 0, wait for its pods to be gone, remove its finalizer from every mgr Deployment of --namespaces, and exit; keys, keyrings and Services stay")
	flag.StringVar(&o.releaseDeployment, "release-deployment", contract.ControllerName, "with --release-mgrs: the controller's Deployment, in --namespace")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	printVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	build := version.Get()
	if *printVersion {
		fmt.Println(build.String(contract.ControllerName))
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	// client-go and leader election log through klog: the same JSON lines.
	klog.SetLogger(ctrl.Log.WithName("klog"))
	ctrl.Log.Info(contract.ControllerName, "version", build.Version, "revision", build.Revision, "go", build.GoVersion)
	metrics.Registry.MustRegister(version.Collector(contract.ControllerName))
	flag.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if o.release {
		if err := release(o); err != nil {
			fmt.Fprintln(os.Stderr, contract.ControllerName+" --release-mgrs:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, contract.ControllerName+":", err)
		os.Exit(1)
	}
}

// run starts the controller and returns when it stops.
func run(o options) error {
	switch o.caps {
	case "mgr-profile":
		o.Caps = contract.DefaultCaps
	case "allow-all":
		o.Caps = contract.SeedCaps
	default:
		return fmt.Errorf(`--caps must be "mgr-profile" or "allow-all", got %q`, o.caps)
	}
	policies, err := policy.FromFile(o.policyFile)
	if err != nil {
		return err
	}
	// The policy in force (the file's or the built-in one, then the
	// MgrPolicy's when --policy-name names one) gives what no flag sets; a
	// flag given, even empty, overrides it. The audit judges by all of it.
	o.Policy, o.PolicyName, o.Pod = policies, o.policyName, o.podName
	o.Modules = flagList(o.set["modules"], contract.SplitList(o.modules))
	o.ModuleChoices = flagList(o.set["module-choices"], contract.SplitList(o.choices))
	o.AdoptExistingKeys = flagList(o.set["adopt-existing-keys"], contract.SplitList(o.adopt))
	for _, n := range contract.SplitList(o.monNetworks) {
		p, err := netip.ParsePrefix(n)
		if err != nil {
			return fmt.Errorf("--mon-networks: %q is not a network in CIDR form (10.96.0.0/12, fd00::/8): %w", n, err)
		}
		o.MonNetworks = append(o.MonNetworks, p.Masked())
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
	runner := &ceph.Runner{Binary: o.cephBinary, Timeout: o.cephTimeout, ConnectTimeout: o.connectTimeout}
	if o.cephPython == "" {
		if o.cephPython, err = ceph.PythonOf(o.cephBinary); err != nil {
			ctrl.Log.Error(err, "no interpreter for the mgr map reader: the role watcher will run the ceph CLI for every read, which costs about 0.35 s of CPU each; set --ceph-python")
		}
	}
	if o.cephPython != "" {
		runner.Monitor = &ceph.Monitor{Python: o.cephPython, Timeout: o.statTimeout}
		defer runner.Monitor.Close()
	}
	if v, err := runner.CLIVersion(context.Background()); err != nil {
		ctrl.Log.Error(err, "the ceph CLI does not answer --version: every ceph call will fail", "cephBinary", o.cephBinary)
	} else {
		ctrl.Log.Info("ceph CLI", "version", v.String(), "note", "clusters of a newer release than the CLI are not supported: their keys may be of a type it cannot read")
	}
	// Versions before the memfd runner left credential dirs behind when killed.
	if n, err := ceph.RemoveStale(""); err != nil {
		ctrl.Log.Error(err, "removing stale ceph credential dirs")
	} else if n > 0 {
		ctrl.Log.Info("removed ceph credential dirs an earlier version left", "count", n)
	}
	if err := bootstrap.Setup(mgr, o.Options, runner, o.maxConcurrent); err != nil {
		return err
	}
	modules, choices, _ := o.InForce()
	ctrl.Log.Info("starting mgr-bootstrap", "policy", o.Policy.InForce().Source, "modules", modules, "moduleChoices", choices, "leaderElect", o.leaderElect, "namespaces", contract.SplitList(o.namespaces))
	return mgr.Start(ctrl.SetupSignalHandler())
}

// release runs bootstrap.Release as the flags say.
func release(o options) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	cl, err := bootstrap.ReleaseClient(cfg)
	if err != nil {
		return err
	}
	r := bootstrap.Release{Client: cl, Namespace: ownNamespace(o.Namespace, o.leaderElectionNamespace), Deployment: o.releaseDeployment,
		Namespaces: contract.SplitList(o.namespaces), Wait: 2 * time.Minute}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	rep, err := r.Run(ctx)
	ctrl.Log.Info("released the mgr Deployments: their cephx keys stay in Ceph", "released", rep.Released, "controllerPodsLeft", rep.PodsLeft)
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

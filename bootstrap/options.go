// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"net/netip"
	"slices"
	"time"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/bootstrap/cluster"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/policy"
)

// Ceph is what the controller asks of a Ceph cluster (*ceph.Runner).
type Ceph = cluster.Ceph

// Options configure the controller.
type Options struct {
	// Caps of a mgr's cephx key.
	Caps []string
	// Modules to enable, unless a Deployment chooses others by annotation.
	Modules []string
	// ModuleChoices are the modules such an annotation may name (the
	// policy's moduleChoices); an annotation naming others, or any when this
	// is empty, is ignored: the modules are the cluster's, not an editor's.
	ModuleChoices []string
	// OrchestratorBackend is set once the rook module is on ("" to skip).
	OrchestratorBackend string
	// ModuleTimeout bounds the retries of one module step while the mgr restarts.
	ModuleTimeout time.Duration
	// RetryInterval is the first wait between those retries.
	RetryInterval time.Duration
	// FinalizerTimeout is how long a deleted mgr waits for Ceph to remove its
	// key before the controller lets go and says so.
	FinalizerTimeout time.Duration
	// WaitForMgr is how often to look again while Ceph does not list the mgr.
	WaitForMgr time.Duration
	// CephRetryMax caps the wait between attempts while a cluster does not
	// answer (from 1 s, doubling).
	CephRetryMax time.Duration
	// MonNetworks, when any, are the networks a cluster's mon_host may name:
	// the controller dials no mon outside them (an editor who may write
	// rook-ceph-config cannot point it at another address). None: any.
	MonNetworks []netip.Prefix
	// RoleInterval is how often each cluster with two or more mgrs is asked
	// which one is active (`ceph mgr stat`), to label the pods mgr_role.
	RoleInterval time.Duration
	// RoleWorkers bounds the clusters asked at once; one whose mon does not
	// answer holds a worker for the read's timeout, never the others' turn.
	RoleWorkers int
	// ReleaseInterval is how often each cluster's release floors, releases,
	// health and standbys are read into its CephRelease (three mon reads);
	// 0: never. ReleaseRefresh is how old an unchanged CephRelease may get
	// before it is written again.
	ReleaseInterval, ReleaseRefresh time.Duration
	// ModuleFailoverInterval, when set, is the least time between two
	// failovers of a cluster's active mgr for a module of the controller's
	// that failed on it (read with the CephRelease, so only while
	// ReleaseInterval is on); 0: never fail over (the default: a module
	// that cannot run on any mgr, such as rook where the mgr has no
	// Kubernetes credentials, would cost a failover every interval).
	ModuleFailoverInterval time.Duration
	// Namespaces are the Ceph namespaces served (a namespaced install);
	// none: all. Another install's CephReleases are not this one's to remove.
	Namespaces []string
	// AdoptExistingKeys are the namespaces ("*": all) where the controller
	// takes over a mgr.<id> key that existed before it made one: re-caps it,
	// uses it, and removes it with the Deployment (the policy's
	// adoptExistingKeys).
	AdoptExistingKeys []string
	// ModuleOptions are the modules' options set on section mgr when no
	// Policy is set (the policy's moduleOptions otherwise).
	ModuleOptions map[string]v1alpha1.ModuleOptionValues
	// Policy, when set, gives Modules, ModuleChoices and AdoptExistingKeys
	// where those are nil (no flag set them), read at each reconcile: a
	// changed MgrPolicy is in force without a restart, and every mgr is
	// reconciled again when it changes.
	Policy *policy.Store
	// AuditInterval is how often every managed mgr is judged against Policy
	// (and whenever it changes); 0: no audit. Needs Policy.
	AuditInterval time.Duration
	// AuditReportLimit caps the results of a namespace's Report.
	AuditReportLimit int
	// PolicyName, when set, is the MgrPolicy watched into Policy; this
	// controller writes its conditions and Events.
	PolicyName string
	// Pod is this replica's Pod name: its entry in the MgrPolicy's
	// status.byPod ("" writes none).
	Pod string
	// Namespace is the controller's own: where the key that seals its status
	// lives (Secret mgrstatus.KeySecretName), out of Ceph namespace editors' reach.
	Namespace string
}

// DefaultOptions are the seed's choices.
func DefaultOptions() Options {
	return Options{
		Caps:                contract.DefaultCaps,
		Modules:             slices.Clone(contract.DefaultModules),
		OrchestratorBackend: "rook",
		ModuleTimeout:       3 * time.Minute,
		RetryInterval:       2 * time.Second,
		FinalizerTimeout:    2 * time.Minute,
		WaitForMgr:          5 * time.Second,
		CephRetryMax:        cluster.DefaultRetryMax,
		RoleInterval:        5 * time.Second,
		RoleWorkers:         16,
		ReleaseInterval:     time.Minute,
		ReleaseRefresh:      10 * time.Minute,
		AuditInterval:       time.Minute,
		AuditReportLimit:    100,
		Namespace:           contract.InstallNamespace,
	}
}

// InForce are the modules, module choices and adoption namespaces in force:
// the Options' where set, else the policy's.
func (o Options) InForce() (modules, choices, adopt []string) {
	modules, choices, adopt = o.Modules, o.ModuleChoices, o.AdoptExistingKeys
	if o.Policy == nil {
		return modules, choices, adopt
	}
	p := o.Policy.Current()
	if modules == nil {
		modules = p.Modules
	}
	if choices == nil {
		choices = p.ModuleChoices
	}
	if adopt == nil {
		adopt = p.AdoptExistingKeys
	}
	return modules, choices, adopt
}

// serverAddrInit reports whether the policy in force runs the mgrs'
// server_addr init containers: only then does a mgr get their key.
func (o Options) serverAddrInit() bool {
	enabled := o.Policy.Current().ServerAddrInitContainers.Enabled
	return enabled == nil || *enabled
}

// adopts reports whether existing keys of namespace ns may be adopted.
func (o Options) adopts(ns string) bool {
	_, _, adopt := o.InForce()
	return slices.Contains(adopt, ns) || slices.Contains(adopt, "*")
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package contract holds what the webhook, the bootstrap controller and their
// users agree on: the labels, annotations and finalizer on a mgr Deployment,
// the names of the cluster's and the mgr's Secrets and Services, the ports,
// and the default cephx caps and mgr modules. It is a leaf: it imports nothing
// of this project, so every package (the pure mutate core included) can share
// one spelling of each name.
package contract

import (
	"fmt"
	"regexp"
	"strings"
)

// Labels that select and describe a mgr, as Rook names them.
const (
	LabelApp          = "app"
	LabelMgrID        = "mgr"
	LabelCephDaemonID = "ceph_daemon_id"
	LabelInstance     = "instance"
	LabelRookCluster  = "rook_cluster"
	// LabelMgrRole is on mgr pods (set by the bootstrap controller from the
	// cluster's mgr map): RoleActive or RoleStandby. The cluster's Services
	// select the active mgr by it.
	LabelMgrRole = "mgr_role"
	RoleActive   = "active"
	RoleStandby  = "standby"

	// AppName is the value of LabelApp on every mgr Deployment and Pod.
	AppName = "rook-ceph-mgr"
)

// Where, in each Ceph cluster's config-key store, the controller records
// what it must remember of the cluster. They live in Ceph, written with the
// admin key, so no namespace editor writes them and no status written back
// replays them; they are the cluster's, as the modules are.
const (
	// ModulesRecordKey: the modules the controller turned on itself
	// (comma-separated), the only ones it turns off.
	ModulesRecordKey = "mgr-bootstrap/modules-enabled"
	// ModuleFailoverKey: when the controller last failed the active mgr
	// over for a failed module (RFC 3339), so that its budget outlives a
	// restart of the controller.
	ModuleFailoverKey = "mgr-bootstrap/module-failover"
	// ModuleOptionsRecordKey: the module options (mgr/<module>/<option>,
	// comma-separated) the controller set on section mgr for the policy's
	// moduleOptions, the only ones it removes when the policy drops them.
	ModuleOptionsRecordKey = "mgr-bootstrap/module-options"
)

// The install: the namespace the manifests and the chart install into, and
// its two components' names, each one's Deployment, ServiceAccount, Event
// source, field manager and leader-election lease prefix.
const (
	InstallNamespace = "mgr-webhook-system"
	WebhookName      = "mgr-webhook"
	ControllerName   = "mgr-bootstrap"
)

// Annotations read and written on the Deployment.
const (
	// AnnotationInjectSidecars asks for policy sidecars by name, comma-separated.
	AnnotationInjectSidecars = "mgr.ceph.rook.io/inject-sidecars"
	// AnnotationSidecarStatus records which sidecars were injected and from
	// which policy spec, so a re-injection replaces exactly those (as Istio's
	// sidecar.istio.io/status does).
	AnnotationSidecarStatus = "mgr.ceph.rook.io/sidecar-status"
	// AnnotationModules overrides, per Deployment, the mgr modules the
	// bootstrap controller enables (comma-separated).
	AnnotationModules = "mgr.ceph.rook.io/modules"
	// AnnotationBootstrapStatus is the bootstrap controller's machine-readable
	// status of the mgr (JSON).
	AnnotationBootstrapStatus = "mgr.ceph.rook.io/bootstrap-status"
	// AnnotationCompletedBy names what last completed the mgr: the
	// project's version and the hash of the policy in force (JSON), as
	// Istio's sidecar.istio.io/status names its template; the webhook
	// rewrites it on every write it completes.
	AnnotationCompletedBy = "mgr.ceph.rook.io/completed-by"
	// FinalizerCephxKey holds a mgr Deployment until its cephx key is removed.
	FinalizerCephxKey = "mgr.ceph.rook.io/cephx-key"
	// AnnotationDeploymentRevision is written by the deployment controller.
	AnnotationDeploymentRevision = "deployment.kubernetes.io/revision"
	// AnnotationRestartedAt is what `kubectl rollout restart` writes on a
	// pod template: new pods of the same spec.
	AnnotationRestartedAt = "kubectl.kubernetes.io/restartedAt"
	// AnnotationRolloutHold marks a mgr Deployment the webhook paused when
	// its pod template changed, for the controller to roll the cluster's
	// mgrs standby first (docs/rollouts.md). Only the webhook sets it: on
	// any write it is what the webhook decides, whatever the writer sent.
	AnnotationRolloutHold = "mgr.ceph.rook.io/rollout-hold"

	// AnnotationCephxKeyGeneration, on a mgr's pod template, is the
	// generation of the cephx keys its pod runs with (absent: 1). The
	// controller raises it when it rotates them, which restarts the pod on
	// its new keys; it names the key's generation, never the key.
	AnnotationCephxKeyGeneration = "mgr.ceph.rook.io/cephx-key-generation"
	// RolloutHoldStandbysFirst is its value.
	RolloutHoldStandbysFirst = "standbys-first"
)

// Opting out, and the owner that makes Rook's operator responsible instead.
const (
	// LabelManaged set to "false" opts a Deployment out of the webhooks and
	// the controller (Istio's sidecar.istio.io/inject: "false" convention).
	LabelManaged = "mgr.ceph.rook.io/managed"
	// RookAPIGroup and CephClusterKind name the owner of Rook's own mgr
	// Deployments, which its operator manages.
	RookAPIGroup    = "ceph.rook.io"
	CephClusterKind = "CephCluster"
)

// Names of the namespace's cluster objects (Rook's), which make a namespace a
// Ceph cluster. Rook's mon Secret also holds the fsid, beside the mon and admin
// keys: nothing here reads it (the fsid comes from ConfigMap rook-ceph-config);
// the tests create it as Rook does.
const (
	MonSecretName          = "rook-ceph-mon"
	MonSecretFSIDKey       = "fsid"
	ConfigSecretName       = "rook-ceph-config"
	ConfigSecretMonHostKey = "mon_host"
	ConfigSecretMembersKey = "mon_initial_members"
	ConfigMapName          = "rook-ceph-config"
	ConfigMapConfKey       = "ceph.conf"
	AdminKeyringSecretName = "rook-ceph-admin-keyring"
	// KeyringKey holds the keyring file in every keyring Secret (admin and mgr).
	KeyringKey = "keyring"
)

// The mgr container and its ports, which the controller reads back to
// configure the modules.
const (
	MgrContainerName = "mgr"

	PortMgr         = 6800
	PortMetrics     = 9283
	PortDashboard   = 8443
	PortNameMgr     = "mgr"
	PortNameMetrics = "http-metrics"
	PortNameDash    = "dashboard"
)

// DashboardPasswordSecretName holds the password of the dashboard's admin user.
const (
	DashboardPasswordSecretName = "rook-ceph-dashboard-password"
	DashboardPasswordKey        = "password"
	DashboardUser               = "admin"
)

// DeploymentName is the only name a mgr Deployment of mgr <id> may have
// (Rook's): the API server then keeps one Deployment per mgr id.
func DeploymentName(id string) string { return AppName + "-" + id }

// The cluster's Services, as Rook names them: one each per namespace, in
// front of the active mgr's prometheus module and dashboard.
const (
	MetricsServiceName   = AppName
	DashboardServiceName = AppName + "-dashboard"
)

// LegacyMetricsServiceName and LegacyDashboardServiceName are the per-mgr
// Services of earlier versions, which the controller removes.
func LegacyMetricsServiceName(id string) string { return AppName + "-" + id }

// LegacyDashboardServiceName: see LegacyMetricsServiceName.
func LegacyDashboardServiceName(id string) string { return AppName + "-" + id + "-dashboard" }

// KeyringSecretName is the Secret holding the cephx keyring of mgr <id>; the
// bootstrap controller creates it and the Pod mounts it.
func KeyringSecretName(id string) string { return AppName + "-" + id + "-keyring" }

// ServerAddrModules are the modules whose per-mgr server_addr the mgr pod's
// init containers set to the Pod IP before the mgr starts (the seed's).
var ServerAddrModules = []string{"dashboard", "prometheus"}

// PerMgrModuleOptions are the module options each mgr gets of its own, from
// its container (ports) and Pod (server_addr), by module: a policy's
// moduleOptions cannot set them for every mgr at once.
var PerMgrModuleOptions = map[string][]string{
	"prometheus": {"server_addr", "server_port"},
	"dashboard":  {"server_addr", "server_port", "ssl", "ssl_server_port"},
}

// SensitiveModuleOption matches the name of a module option that may hold a
// credential (influx's password, an API token or key): no policy sets one
// (a MgrPolicy is readable by whoever may read policies, and the value
// would reach Ceph's audit log on a command line), and no Event or Report
// shows its value.
var SensitiveModuleOption = regexp.MustCompile(`(?i)pass|secret|key|token|cred`)

// ServerAddrEntity is the cephx user those init containers run as: a key of
// their own, so that no mgr pod holds client.admin (Rook dropped the init
// containers in v1.6 for that reason).
func ServerAddrEntity(id string) string { return "client.rook-ceph-server-addr-" + id }

// ServerAddrKeyringSecretName holds ServerAddrEntity's keyring. It is not
// rook-ceph-mgr-<x>-keyring: that would be the keyring of some other mgr id x.
func ServerAddrKeyringSecretName(id string) string { return "rook-ceph-server-addr-" + id + "-keyring" }

// ServerAddrCaps are ServerAddrEntity's caps: `config set` of its mgr's
// server_addr options and nothing else (Ceph's command caps with arguments;
// the value is free, the Pod IP). The mon compares caps as strings, so they
// are built here only.
func ServerAddrCaps(id string) []string {
	grants := make([]string, 0, len(ServerAddrModules))
	for _, module := range ServerAddrModules {
		grants = append(grants, fmt.Sprintf(`allow command "config set" with who=mgr.%s name=mgr/%s/%s/server_addr`, id, module, id))
	}
	return []string{"mon", strings.Join(grants, ", ")}
}

// Defaults shared by the policy, the controller and the test clusters. They
// are read-only: clone before changing.
var (
	// DefaultCaps are the caps of a mgr's cephx key: Rook's keyring template.
	DefaultCaps = []string{"mon", "allow profile mgr", "mds", "allow *", "osd", "allow *"}
	// SeedCaps are the seed's caps (`allow *` everywhere), offered as an option.
	SeedCaps = []string{"mon", "allow *", "mds", "allow *", "osd", "allow *"}
	// DefaultModules are the mgr modules the seed's operator enables.
	DefaultModules = []string{"orchestrator_cli", "rook", "prometheus", "dashboard"}
)

// CapsNamed are a mgr key's caps by the name --caps gives them:
// "mgr-profile" (DefaultCaps, Rook's) or "allow-all" (SeedCaps).
func CapsNamed(name string) ([]string, error) {
	switch name {
	case "mgr-profile":
		return DefaultCaps, nil
	case "allow-all":
		return SeedCaps, nil
	}
	return nil, fmt.Errorf(`--caps must be "mgr-profile" or "allow-all", got %q`, name)
}

// Package mutate completes and validates Ceph manager (ceph-mgr) Deployments.
//
// It is the pure core of the project: functions take values (a Deployment, the
// ClusterInfo of its namespace, the site Policy) and return values. It does no
// I/O, reads no clock and holds no globals, so the webhook, tests and any
// offline tool complete a Deployment the same way.
package mutate

import "fmt"

// Labels that select and describe a mgr, as Rook names them.
const (
	LabelApp          = "app"
	LabelMgrID        = "mgr"
	LabelCephDaemonID = "ceph_daemon_id"
	LabelInstance     = "instance"
	LabelRookCluster  = "rook_cluster"

	// AppName is the value of LabelApp on every mgr Deployment and Pod.
	AppName = "rook-ceph-mgr"
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
	// FinalizerCephxKey holds a mgr Deployment until its cephx key is removed.
	FinalizerCephxKey = "mgr.ceph.rook.io/cephx-key"
	// AnnotationDeploymentRevision is written by the deployment controller.
	AnnotationDeploymentRevision = "deployment.kubernetes.io/revision"
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

// Names inside the completed Pod template.
const (
	MgrContainerName            = "mgr"
	DashboardInitContainerName  = "init-set-dashboard-server-addr"
	PrometheusInitContainerName = "init-set-prometheus-server-addr"

	ConfigVolumeName       = "rook-ceph-config"
	LogVolumeName          = "rook-ceph-log"
	DataVolumeName         = "ceph-daemon-data"
	AdminKeyringVolumeName = "rook-ceph-admin-keyring"

	ConfigMountPath       = "/etc/ceph"
	KeyringMountPath      = "/etc/ceph/keyring-store/"
	AdminKeyringMountPath = "/etc/ceph/admin-keyring-store/"
	LogMountPath          = "/var/log/ceph"

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
func DeploymentName(id string) string { return "rook-ceph-mgr-" + id }

// MetricsServiceName is the Service in front of mgr <id>'s prometheus module.
func MetricsServiceName(id string) string { return fmt.Sprintf("rook-ceph-mgr-%s", id) }

// DashboardServiceName is the Service in front of mgr <id>'s dashboard.
func DashboardServiceName(id string) string { return fmt.Sprintf("rook-ceph-mgr-%s-dashboard", id) }

// KeyringSecretName is the Secret holding the cephx keyring of mgr <id>; the
// bootstrap controller creates it and the Pod mounts it.
func KeyringSecretName(id string) string { return fmt.Sprintf("rook-ceph-mgr-%s-keyring", id) }

// DataMountPath is the mgr's data directory inside the container.
func DataMountPath(id string) string { return "/var/lib/ceph/mgr/ceph-" + id }

// AdminSocketPath is where ceph-mgr <id> puts its admin socket by default
// ($run_dir/$cluster-$name.asok).
func AdminSocketPath(id string) string { return "/var/run/ceph/ceph-mgr." + id + ".asok" }

// LogHostPath is the host directory that receives the cluster's daemon logs.
func LogHostPath(dataDirHostPath, namespace string) string {
	return dataDirHostPath + "/" + namespace + "/log"
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PolicySpec is what a policy says: the fields of a policy file and the spec
// of a MgrPolicy. Every field has a default.
//
// +kubebuilder:object:generate=true
type PolicySpec struct {
	// DefaultImage is used when the Deployment names no image.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^\S+$`
	DefaultImage string `json:"defaultImage,omitempty"`
	// Images restricts which Ceph images a mgr may run.
	Images ImagePolicy `json:"images,omitempty"`
	// DataDirHostPath is Rook's dataDirHostPath; logs go to <it>/<namespace>/log
	// and no other hostPath is admitted.
	// +kubebuilder:validation:Pattern=`^/`
	DataDirHostPath string `json:"dataDirHostPath,omitempty"`
	// ServiceAccountName for the mgr Pod; empty leaves it unset.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// Rook holds the operator values exported to the mgr as ROOK_* env.
	Rook RookValues `json:"rook,omitempty"`
	// ServerAddrInitContainers controls the two init containers that point the
	// dashboard and prometheus modules at the Pod IP.
	ServerAddrInitContainers ServerAddrInitContainers `json:"serverAddrInitContainers,omitempty"`
	// LivenessProbe controls the admin-socket liveness probe added to the mgr.
	LivenessProbe LivenessProbe `json:"livenessProbe,omitempty"`
	// StartupProbe controls the admin-socket startup probe added to the mgr
	// (Rook's: 10 s apart, 6 failures), which holds the liveness probe off
	// while a mgr loads its modules.
	StartupProbe StartupProbe `json:"startupProbe,omitempty"`
	// HandOver controls the mgr container's preStop hook that fails the mgr
	// over before its pod stops (a drain, a rollout, a deletion): a standby
	// takes the active role at once, where Ceph would otherwise wait out
	// mon_mgr_beacon_grace (30 s) with no active mgr.
	HandOver HandOver `json:"handOver,omitempty"`
	// Placement is where the mgrs of a cluster run, as Rook places them.
	Placement Placement `json:"placement,omitempty"`
	// AllowPrivileged admits privileged containers.
	AllowPrivileged bool `json:"allowPrivileged,omitempty"`
	// AllowHostNetwork admits hostNetwork: true.
	AllowHostNetwork bool `json:"allowHostNetwork,omitempty"`
	// Modules are the mgr modules the bootstrap controller enables.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[a-z][a-z0-9_]*$`
	// +listType=set
	Modules []string `json:"modules,omitempty"`
	// ModuleChoices are the modules a mgr Deployment's annotation
	// mgr.ceph.rook.io/modules may name instead of Modules. Empty: no
	// Deployment chooses (the webhook refuses the annotation, the controller
	// ignores it), because the modules are the whole Ceph cluster's and a
	// Deployment's editor must not steer what the controller turns on or off
	// (mgr-bootstrap --policy reads this).
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[a-z][a-z0-9_]*$`
	// +listType=set
	ModuleChoices []string `json:"moduleChoices,omitempty"`
	// ModuleOptions are options of the mgr modules, by module and option
	// name (e.g. prometheus: {scrape_interval: "15"}, balancer: {mode:
	// upmap}), which the bootstrap controller sets on section mgr (every mgr
	// of a cluster) with --force before it enables a module, so an option of
	// a module not loaded yet blocks nothing, and changes only where Ceph's
	// value differs. The options it sets per mgr from the mgr's own
	// container (prometheus and dashboard server_addr and ports, dashboard
	// ssl) are not among them.
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(m, m.matches('^[a-z][a-z0-9_]*$') && size(m) <= 64)",message="a module is named like prometheus or balancer"
	ModuleOptions map[string]ModuleOptionValues `json:"moduleOptions,omitempty"`
	// RestoreModuleOptions sets an option of ModuleOptions changed in Ceph
	// by hand back to the policy's value when the controller next reads the
	// cluster (every release interval). Without it the change is reported
	// in the namespace's Report (rule moduleOptions) and an Event, and left.
	RestoreModuleOptions bool `json:"restoreModuleOptions,omitempty"`
	// Sidecars are containers a Deployment may ask for by name with the
	// mgr.ceph.rook.io/inject-sidecars annotation.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'mgr')",message="the name of the mgr container cannot be a sidecar"
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k].name == k)",message="a sidecar's name must equal its key"
	// +kubebuilder:validation:XValidation:rule="self.all(k, has(self[k].image) && self[k].image != '')",message="a sidecar needs an image"
	Sidecars map[string]corev1.Container `json:"sidecars,omitempty"`
	// AdoptExistingKeys are the namespaces ("*": every one) where the
	// bootstrap controller takes over a mgr.<id> cephx key that existed
	// before it made one (re-caps it, and removes it with the Deployment).
	// Elsewhere such a key is left as it is and the mgr reports an error
	// (mgr-bootstrap --policy reads this).
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	AdoptExistingKeys []string `json:"adoptExistingKeys,omitempty"`
	// CephxKeys says when the bootstrap controller rotates the cephx keys it
	// owns (each mgr's mgr.<id> key and its server_addr key) and of which
	// type. A rotation restarts the mgr's pod on its new key, standbys
	// first with one failover (docs/key-rotation.md).
	CephxKeys CephxKeys `json:"cephxKeys,omitempty"`
	// Exemptions are the mgr Deployments this policy does not govern: the
	// webhooks leave them as they are, and only these may carry the opt-out
	// label mgr.ceph.rook.io/managed=false (which then also releases them
	// from the bootstrap controller). Only the policy's owner grants one: no
	// label, annotation or owner reference that a Deployment's editor writes
	// exempts it.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=atomic
	Exemptions []Exemption `json:"exemptions,omitempty"`
	// Enforcement sets, per rule, what a violation does: Deny (the default),
	// Warn (admitted, with a warning to the writer) or Audit (admitted,
	// recorded in the request's audit annotations and the audit report
	// only), so a stricter rule can be rolled out warn first, then deny.
	// The rules: images.allowedRepositories, images.minimumCephVersion,
	// images.allowLatest, allowPrivileged, allowHostNetwork,
	// dataDirHostPath, images.upgradePath, images.upgradeReadiness (which
	// warns unless set). The rules that keep a Ceph cluster whole (mgr
	// identity, one replica, its keyring and fsid) always deny.
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['images.allowedRepositories', 'images.minimumCephVersion', 'images.allowLatest', 'allowPrivileged', 'allowHostNetwork', 'dataDirHostPath', 'images.upgradePath', 'images.upgradeReadiness'])",message="a rule is one of images.allowedRepositories, images.minimumCephVersion, images.allowLatest, allowPrivileged, allowHostNetwork, dataDirHostPath, images.upgradePath, images.upgradeReadiness"
	Enforcement map[Rule]Action `json:"enforcement,omitempty"`
}

// Exemption names mgr Deployments the policy leaves alone.
//
// +kubebuilder:object:generate=true
type Exemption struct {
	// Namespace the Deployments are in (required).
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`
	// Names of the Deployments; empty exempts every Deployment of Namespace.
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +listType=set
	Names []string `json:"names,omitempty"`
}

// ImagePolicy restricts the Ceph images a mgr may run.
//
// +kubebuilder:object:generate=true
type ImagePolicy struct {
	// AllowedRepositories are fully qualified repositories (registry/path).
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=255
	// +listType=set
	AllowedRepositories []string `json:"allowedRepositories,omitempty"`
	// MinimumCephVersion is the oldest Ceph release admitted, e.g. "16.2.0".
	// Default: the oldest release Ceph still maintains (19.2.0, Squid);
	// lower it to admit an end-of-life release.
	// +kubebuilder:validation:Pattern=`^v?[0-9]+(\.[0-9]+){0,2}(-.*)?$`
	MinimumCephVersion string `json:"minimumCephVersion,omitempty"`
	// AllowLatest admits the "latest" tag (whose release cannot be checked).
	AllowLatest bool `json:"allowLatest,omitempty"`
	// UpgradePath is the release guard: a change of a mgr's Ceph release is
	// judged by Ceph's upgrade path and the cluster's state, as the
	// bootstrap controller last read it (CephRelease).
	UpgradePath UpgradePath `json:"upgradePath,omitempty"`
}

// RookValues are the operator's values that the seed's mgr receives as env.
//
// +kubebuilder:object:generate=true
type RookValues struct {
	OperatorNamespace string `json:"operatorNamespace,omitempty"`
	// OperatorServiceAccount is the ServiceAccount Rook's operator runs as,
	// in OperatorNamespace (default rook-ceph-system): the only writer,
	// besides system:masters, that may create a mgr Deployment a CephCluster
	// owns or change the pods it runs.
	OperatorServiceAccount string `json:"operatorServiceAccount,omitempty"`
	// Version is read and ignored: it was exported as ROOK_VERSION, which
	// restarted every mgr when it changed (rook#4361; Rook dropped it in
	// 2019). It stays so that policies which set it still load.
	Version           string `json:"version,omitempty"`
	ClusterCRDVersion string `json:"clusterCRDVersion,omitempty"`
}

// ServerAddrInitContainers controls the init containers that run
// `ceph config set mgr.<id> mgr/<module>/<id>/server_addr $(ROOK_POD_IP)`.
//
// +kubebuilder:object:generate=true
type ServerAddrInitContainers struct {
	// Enabled defaults to true.
	Enabled *bool `json:"enabled,omitempty"`
	// ConnectTimeoutSeconds bounds the mon connection, so an unreachable mon
	// fails the init container instead of hanging it forever (rook#3049).
	// +kubebuilder:validation:Minimum=0
	ConnectTimeoutSeconds int32 `json:"connectTimeoutSeconds,omitempty"`
}

// LivenessProbe controls the liveness probe added when the user wrote none.
// It asks the mgr's admin socket, never the prometheus port: an HTTP probe on
// 9283 killed healthy mgrs whenever the prometheus module failed (rook#3370).
//
// +kubebuilder:object:generate=true
type LivenessProbe struct {
	// Enabled defaults to true.
	Enabled *bool `json:"enabled,omitempty"`
}

// StartupProbe controls the startup probe added when the user wrote none.
//
// +kubebuilder:object:generate=true
type StartupProbe struct {
	// Enabled defaults to true.
	Enabled *bool `json:"enabled,omitempty"`
}

// HandOver controls the preStop hook added when the mgr container has no
// lifecycle of its own.
//
// +kubebuilder:object:generate=true
type HandOver struct {
	// Enabled defaults to true.
	Enabled *bool `json:"enabled,omitempty"`
}

// Placement is what completion adds to a mgr's Pod so that one node's loss
// takes one mgr of a cluster at most and a lost mgr comes back in seconds,
// as Rook places its mgrs. A value the Deployment sets itself is kept.
//
// +kubebuilder:object:generate=true
type Placement struct {
	// AllowMultiplePerNode relaxes the anti-affinity between the mgrs of one
	// cluster (pods labelled app=rook-ceph-mgr, rook_cluster=<namespace>)
	// on kubernetes.io/hostname from required to preferred, as Rook's
	// spec.mgr.allowMultiplePerNode: for clusters with fewer nodes than mgrs.
	AllowMultiplePerNode bool `json:"allowMultiplePerNode,omitempty"`
	// PriorityClassName of the mgr Pod (default system-cluster-critical, as
	// Rook's example cluster): a mgr is not preempted for ordinary pods.
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// NodeLossTolerationSeconds is how long a mgr stays bound to a node that
	// is unreachable or not ready (tolerations of node.kubernetes.io/
	// unreachable and not-ready, NoExecute) before it is evicted and
	// replaced: default 5, Rook's, instead of Kubernetes' 300.
	// +kubebuilder:validation:Minimum=0
	NodeLossTolerationSeconds *int64 `json:"nodeLossTolerationSeconds,omitempty"`
}

// CephxKeys is the rotation of the cephx keys the controller owns. A key
// starts at generation 1; each rotation makes a new key in Ceph
// (`ceph auth rotate`), writes it into the mgr's keyring Secret and restarts
// the mgr's pod through its template annotation
// mgr.ceph.rook.io/cephx-key-generation (the generation, never the key).
//
// +kubebuilder:object:generate=true
// +kubebuilder:validation:XValidation:rule="!has(self.rotateAfter) || duration(self.rotateAfter) >= duration('1h')",message="rotateAfter is at least 1h: each rotation restarts every mgr of a cluster"
type CephxKeys struct {
	// Generation rotates, once, every owned key of a lower generation:
	// raise it to rotate every mgr's key now (as Rook's
	// security.cephx.daemon.keyGeneration).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// RotateAfter rotates a key once it is this old ("2160h"); unset, a key
	// is rotated only by Generation or KeyType.
	// +optional
	RotateAfter *metav1.Duration `json:"rotateAfter,omitempty"`
	// KeyType is the cephx key type of the keys: "" (default) the most
	// secure type every mon and mgr of the cluster runs a release of
	// (aes256k from Tentacle 20.2.4 and Squid 19.2.6, else aes), so a key
	// of an older type is migrated once the cluster can (Ceph raises
	// HEALTH_ERR AUTH_INSECURE_SERVICE_KEY_TYPE until it is); "aes" keeps
	// (or takes back to) the old type, for clients that cannot use the new
	// one; "aes256k" asks for the new one.
	// +kubebuilder:validation:Enum="";aes;aes256k
	// +optional
	KeyType string `json:"keyType,omitempty"`
	// Namespaces are the Ceph namespaces whose keys Generation and
	// RotateAfter rotate (each cluster in its own maintenance window, as
	// Rook's per-CephCluster setting); empty: every one. A key Ceph reports
	// insecure is migrated in every namespace.
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
}

// Action is what a violated rule does to a write, in the words of a
// ValidatingAdmissionPolicy's validationActions.
//
// +kubebuilder:validation:Enum=Deny;Warn;Audit
type Action string

// Rule names a rule whose action the policy's owner chooses: the site's
// choices about images and the pod's reach into its node. The rules that keep
// a Ceph cluster whole (one Deployment per mgr id, one replica, its own
// keyring and fsid, the opt-out label) always deny.
type Rule string

// UpgradePath configures the release guard (rules images.upgradePath and
// images.upgradeReadiness).
//
// +kubebuilder:object:generate=true
type UpgradePath struct {
	// ExemptNamespaces are the Ceph namespaces whose mgrs' release changes
	// the guard leaves unjudged (an upgrade the site has checked by hand).
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	ExemptNamespaces []string `json:"exemptNamespaces,omitempty"`
}

// ModuleOptionValues are one module's options, by option name (as in
// `ceph config set mgr mgr/<module>/<option> <value>`).
// +kubebuilder:validation:MaxProperties=32
// +kubebuilder:validation:XValidation:rule="self.all(o, o.matches('^[a-z][a-z0-9_]*$') && size(o) <= 64)",message="an option is named like scrape_interval"
// +kubebuilder:validation:XValidation:rule="self.all(o, size(self[o]) >= 1 && size(self[o]) <= 256)",message="an option's value is 1 to 256 characters"
type ModuleOptionValues map[string]string

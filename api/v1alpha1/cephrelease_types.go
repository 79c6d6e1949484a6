// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CephRelease is what the bootstrap controller last read of one Ceph
// cluster's releases: the floors its mons and OSDs hold, the releases its
// mons and mgrs run, its health and its standby mgrs. The webhook judges a
// change of a mgr's Ceph release by it (the release guard). Its name is the
// cluster's namespace; only the controller writes it, and it has no spec.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Require-OSD",type=string,JSONPath=`.status.requireOSDRelease`
// +kubebuilder:printcolumn:name="Min-Mon",type=string,JSONPath=`.status.minMonRelease`
// +kubebuilder:printcolumn:name="Mons",type=string,JSONPath=`.status.monReleases`
// +kubebuilder:printcolumn:name="Mgrs",type=string,JSONPath=`.status.mgrReleases`
// +kubebuilder:printcolumn:name="Health",type=string,JSONPath=`.status.health`
// +kubebuilder:printcolumn:name="Standbys",type=integer,JSONPath=`.status.standbyMgrs`
// +kubebuilder:printcolumn:name="Read",type=date,JSONPath=`.status.readTime`
type CephRelease struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status CephReleaseStatus `json:"status,omitempty"`
}

// CephReleaseStatus is one read of a cluster: `ceph status`, `ceph osd
// dump` and `ceph versions` (and `ceph health detail` while a mgr module
// has failed).
type CephReleaseStatus struct {
	// RequireOSDRelease is the oldest release an OSD may run, by name
	// (raised by `ceph osd require-osd-release`).
	// +optional
	RequireOSDRelease string `json:"requireOSDRelease,omitempty"`
	// MinMonRelease is the oldest release a mon runs, by name.
	// +optional
	MinMonRelease string `json:"minMonRelease,omitempty"`
	// MonReleases and MgrReleases are the releases the mons and the mgrs
	// run, oldest first ("16.2.15").
	// +listType=atomic
	// +optional
	MonReleases []string `json:"monReleases,omitempty"`
	// +listType=atomic
	// +optional
	MgrReleases []string `json:"mgrReleases,omitempty"`
	// Health is HEALTH_OK, HEALTH_WARN or HEALTH_ERR.
	// +optional
	Health string `json:"health,omitempty"`
	// StandbyMgrs is the number of standby mgrs in the mgr map.
	StandbyMgrs int32 `json:"standbyMgrs"`
	// FailedModules are the mgr modules that failed on the active mgr
	// (health check MGR_MODULE_ERROR), each with Ceph's error.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +optional
	FailedModules []FailedModule `json:"failedModules,omitempty"`
	// InsecureMgrKeys are the mgr entities whose cephx key Ceph reports of
	// an insecure type (health check AUTH_INSECURE_SERVICE_KEY_TYPE): the
	// controller rotates those it owns to the secure type.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	InsecureMgrKeys []string `json:"insecureMgrKeys,omitempty"`
	// ReadTime is when the controller read the cluster.
	// +optional
	ReadTime metav1.Time `json:"readTime,omitzero"`
}

// FailedModule is a mgr module that failed on the active mgr.
type FailedModule struct {
	// Name is the module's name ("prometheus").
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`
	// Error is Ceph's error for it, cut to 512 bytes.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Error string `json:"error,omitempty"`
}

// CephReleaseList is a list of CephRelease.
//
// +kubebuilder:object:root=true
type CephReleaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CephRelease `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CephRelease{}, &CephReleaseList{})
}

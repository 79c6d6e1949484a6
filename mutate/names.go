// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package mutate completes and validates Ceph manager (ceph-mgr) Deployments.
//
// It is the pure core of the project: functions take values (a Deployment, the
// ClusterInfo of its namespace, the site Policy) and return values. It does no
// I/O, reads no clock and holds no globals, so the webhook, tests and any
// offline tool complete a Deployment the same way.
package mutate

import "path"

// Names inside the completed Pod template.
const (
	DashboardInitContainerName  = "init-set-dashboard-server-addr"
	PrometheusInitContainerName = "init-set-prometheus-server-addr"

	ConfigVolumeName            = "rook-ceph-config"
	LogVolumeName               = "rook-ceph-log"
	DataVolumeName              = "ceph-daemon-data"
	ServerAddrKeyringVolumeName = "rook-ceph-server-addr-keyring"

	ConfigMountPath            = "/etc/ceph"
	KeyringMountPath           = "/etc/ceph/keyring-store/"
	ServerAddrKeyringMountPath = "/etc/ceph/server-addr-keyring-store/"
	LogMountPath               = "/var/log/ceph"
)

// The seed's init containers ran as client.admin from this volume; Complete
// moves a Deployment completed that way (by an earlier version, or written
// from the seed) to the init containers' own key.
const (
	legacyAdminKeyringVolumeName = "rook-ceph-admin-keyring"
	legacyAdminKeyringMountPath  = "/etc/ceph/admin-keyring-store/"
)

// DataMountPath is the mgr's data directory inside the container.
func DataMountPath(id string) string { return "/var/lib/ceph/mgr/ceph-" + id }

// AdminSocketPath is where ceph-mgr <id> puts its admin socket by default
// ($run_dir/$cluster-$name.asok).
func AdminSocketPath(id string) string { return "/var/run/ceph/ceph-mgr." + id + ".asok" }

// LogHostPath is the host directory that receives the cluster's daemon logs,
// cleaned (Validate compares cleaned paths: a doubled slash must not make the
// completed path look foreign).
func LogHostPath(dataDirHostPath, namespace string) string {
	return path.Join(dataDirHostPath, namespace, "log")
}

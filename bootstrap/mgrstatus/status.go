// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package mgrstatus is where a mgr's bootstrap status lives: the annotation
// mgr.ceph.rook.io/bootstrap-status on its Deployment, which users read and
// which is the controller's memory (the modules it enabled, the ports and
// settings it made, whether it made the mgr's keys). Anyone who may edit the
// Deployment may write the annotation, so the controller acts only on a
// status it sealed itself (seal.go), and the Store remembers what it wrote.
package mgrstatus

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// Phase is where a mgr's bootstrap stands.
type Phase string

// Phases, in the order a mgr passes them.
const (
	PhaseWaitingForPod   Phase = "WaitingForPod"   // keyring and Services done; the pod is not Ready
	PhaseWaitingForMgr   Phase = "WaitingForMgr"   // the pod is Ready; Ceph does not list the mgr yet
	PhaseReady           Phase = "Ready"           // modules enabled and configured
	PhaseCephUnavailable Phase = "CephUnavailable" // the cluster did not answer; retrying with backoff
	PhaseError           Phase = "Error"           // a step failed; see lastError
)

// Status is the machine-readable status the controller keeps in the
// mgr.ceph.rook.io/bootstrap-status annotation of the Deployment.
type Status struct {
	Phase Phase `json:"phase"`
	// ObservedGeneration is the Deployment generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration"`
	// Modules are the wanted modules found on or enabled (always-on included).
	Modules []string `json:"modules,omitempty"`
	// Unavailable are wanted modules this Ceph release lacks or cannot run.
	Unavailable []string `json:"unavailableModules,omitempty"`
	// Dashboard is true once the dashboard has a certificate, its port and its admin user.
	Dashboard bool `json:"dashboard,omitempty"`
	// Backend is the orchestrator backend set (once rook is on).
	Backend string `json:"orchestratorBackend,omitempty"`
	// MetricsPort and DashboardPort are this mgr's module ports as set in
	// Ceph (its container's http-metrics and dashboard ports).
	MetricsPort   int32 `json:"metricsPort,omitempty"`
	DashboardPort int32 `json:"dashboardPort,omitempty"`
	// ModuleOptions is the hash of the policy's moduleOptions last brought
	// into force on the mgr's cluster ("" for none).
	ModuleOptions string `json:"moduleOptions,omitempty"`
	// CephVersion is the release the mgr reported when its modules were planned.
	CephVersion string `json:"cephVersion,omitempty"`
	// KeyOwned records that the controller created mgr.<id>'s cephx key (or
	// adopted it, where the policy allows): only then may it re-cap the key
	// or remove it with the Deployment.
	KeyOwned bool `json:"keyOwned,omitempty"`
	// ServerAddrKeyOwned is KeyOwned for the key of the mgr's server_addr
	// init containers (contract.ServerAddrEntity).
	ServerAddrKeyOwned bool `json:"serverAddrKeyOwned,omitempty"`
	// KeyGeneration is the generation of the mgr's owned keys (0: never
	// rotated, generation 1), KeySince when they were made or last rotated
	// (RFC 3339; "": unknown), KeyRotation where a due rotation
	// stands ("" when none is due).
	KeyGeneration int64  `json:"keyGeneration,omitempty"`
	KeySince      string `json:"keySince,omitempty"`
	KeyRotation   string `json:"keyRotation,omitempty"`
	// Rollout says where a change of the mgr's pods the webhook held for a
	// standby-first rollout stands ("" when none is held).
	Rollout string `json:"rollout,omitempty"`
	// LastError is the last failure, without any key material.
	LastError string `json:"lastError,omitempty"`
	// Seal proves the controller wrote this status (seal.go); a status
	// without a valid one is not the controller's and is ignored.
	Seal string `json:"seal,omitempty"`
}

// Of decodes the status the controller keeps on d: the zero Status when
// there is none, and an error naming the annotation when it is garbled.
// Every reader (the controller, demo, tests, benchmarks) decodes it here.
func Of(d *appsv1.Deployment) (Status, error) {
	var s Status
	v := d.Annotations[contract.AnnotationBootstrapStatus]
	if v == "" {
		return s, nil
	}
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return Status{}, fmt.Errorf("annotation %s of Deployment %s/%s: %w", contract.AnnotationBootstrapStatus, d.Namespace, d.Name, err)
	}
	return s, nil
}

// PhasePending is the phase label of a managed mgr without a status yet.
const PhasePending Phase = "Pending"

// AllPhases are the phases a mgr is counted in, Pending first: the phase
// gauge reports each even at zero, so that an alert or a dashboard sees a
// phase emptied rather than a series vanishing.
var AllPhases = []Phase{PhasePending, PhaseWaitingForPod, PhaseWaitingForMgr, PhaseReady, PhaseCephUnavailable, PhaseError}

func (s Status) encode() string {
	b, _ := json.Marshal(s) // plain fields always marshal
	return string(b)
}

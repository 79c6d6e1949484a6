// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types and reasons of a MgrPolicy.
const (
	// ConditionAccepted is True while the newest spec is the one in force,
	// False while an invalid spec was refused and the last good one is kept.
	ConditionAccepted = "Accepted"
	// ReasonValid: the spec is valid and in force.
	ReasonValid = "Valid"
	// ReasonInvalid: the spec failed validation; the message names the field.
	ReasonInvalid = "Invalid"
)

// Operations a replica reports in status.byPod.
const (
	OperationWebhook    = "webhook"
	OperationController = "controller"
)

// MgrPolicy is the site's policy for mgr Deployments: the values completion
// fills in and the rules validation enforces. The webhook and the controller
// enforce the one their --policy-name names (default "default"); a change is
// in force within seconds, no restart. A spec that fails validation, or a
// deleted MgrPolicy, leaves the last good one in force.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=mgrpol
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Hash",type=string,JSONPath=`.status.policyHash`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MgrPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PolicySpec      `json:"spec,omitempty"`
	Status MgrPolicyStatus `json:"status,omitempty"`
}

// MgrPolicyStatus says which spec is in force, and where.
type MgrPolicyStatus struct {
	// ObservedGeneration is the newest generation the controller judged.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// PolicyHash names the policy in force (mgr-webhook --print-policy of
	// the same spec hashes alike); completed mgrs carry it.
	// +optional
	PolicyHash string `json:"policyHash,omitempty"`
	// Conditions: Accepted. ValidatingAdmissionPolicy mgr-policy judges by
	// the spec only while Accepted is True at the current generation.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ByPod is, per webhook and controller replica, the generation it
	// enforces. Each replica writes its own entry (server-side apply, field
	// manager <operation>/<pod>).
	// +listType=map
	// +listMapKey=id
	// +optional
	ByPod []PodStatus `json:"byPod,omitempty"`
}

// PodStatus is one replica's view of the policy.
type PodStatus struct {
	// ID is the replica's Pod name.
	ID string `json:"id"`
	// Operations are what the replica does with the policy: webhook, controller.
	// +listType=set
	Operations []string `json:"operations,omitempty"`
	// ObservedGeneration is the newest generation the replica has read.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// EnforcedGeneration is the generation in force there; lower than
	// ObservedGeneration while the newest is invalid.
	EnforcedGeneration int64 `json:"enforcedGeneration,omitempty"`
	// PolicyHash names the policy in force there.
	PolicyHash string `json:"policyHash,omitempty"`
	// Errors says why ObservedGeneration is not in force.
	// +listType=atomic
	Errors []string `json:"errors,omitempty"`
}

// MgrPolicyList is a list of MgrPolicy.
//
// +kubebuilder:object:root=true
type MgrPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MgrPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&MgrPolicy{}, &MgrPolicyList{})
}

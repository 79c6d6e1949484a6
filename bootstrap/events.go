// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import "errors"

// Reasons of the Events the controller records on the Deployment.
const (
	ReasonKeyringCreated           = "KeyringCreated"
	ReasonKeyCapsRepaired          = "KeyCapsRepaired"
	ReasonServicesReady            = "ServicesReady"
	ReasonServiceRepaired          = "ServiceRepaired"
	ReasonServicesMigrated         = "ServicesMigrated"
	ReasonPodDisruptionBudget      = "PodDisruptionBudget"
	ReasonModulesConflict          = "ModulesConflict"
	ReasonModulesNotChosen         = "ModulesNotChosen"
	ReasonModulesDisabled          = "ModulesDisabled"
	ReasonModulesEnabled           = "ModulesEnabled"
	ReasonModuleUnavailable        = "ModuleUnavailable"
	ReasonDashboardReady           = "DashboardReady"
	ReasonCephUnavailable          = "CephUnavailable"
	ReasonCephClusterMissing       = "CephClusterMissing"
	ReasonBootstrapFailed          = "BootstrapFailed"
	ReasonKeyRemoved               = "KeyRemoved"
	ReasonKeyRemovalAbandoned      = "KeyRemovalAbandoned"
	ReasonKeyKept                  = "KeyKept"
	ReasonNotOwned                 = "NotOwned"
	ReasonReleased                 = "Released"
	ReasonDashboardPasswordInvalid = "DashboardPasswordInvalid"
	// ReasonStatusForged: the status annotation was not the controller's own.
	ReasonStatusForged = "StatusForged"
	// ReasonKeyNotOwned: the mgr's cephx key existed before; left as it is.
	ReasonKeyNotOwned = "KeyNotOwned"
	// ReasonKeyAdopted: an existing cephx key adopted, as the policy allows.
	ReasonKeyAdopted = "KeyAdopted"
	// ReasonMonHostRefused: mon_host names an address outside --mon-networks.
	ReasonMonHostRefused = "MonHostRefused"
	// ReasonModuleOptionsSet: the policy's moduleOptions set or removed.
	ReasonModuleOptionsSet = "ModuleOptionsSet"
	// ReasonModuleOptionsDrifted: options of moduleOptions changed by hand, left.
	ReasonModuleOptionsDrifted = "ModuleOptionsDrifted"
	// ReasonModuleOptionsRestored: such options set back (restoreModuleOptions).
	ReasonModuleOptionsRestored = "ModuleOptionsRestored"
	// ReasonRolloutReleased: a mgr held for a standby-first rollout resumed.
	ReasonRolloutReleased = "RolloutReleased"
	// ReasonRolloutFailedOver: the held active mgr failed over before its pod rolls.
	ReasonRolloutFailedOver = "RolloutFailedOver"
	// ReasonRolloutStalled: another mgr's rollout stopped; the held mgr waits.
	ReasonRolloutStalled = "RolloutStalled"
	// ReasonKeyRotated: the controller rotated a mgr's cephx keys; its pod restarts on them.
	ReasonKeyRotated = "KeyRotated"
	// ReasonKeyRotationBlocked: a mgr's keys are due but its cluster cannot rotate them.
	ReasonKeyRotationBlocked = "KeyRotationBlocked"
)

var (
	// errNotOwned marks an object of ours by name that another owner holds.
	errNotOwned = errors.New("not owned by this Deployment")
	// errDashboardPassword marks a password Secret the controller cannot use.
	errDashboardPassword = errors.New("dashboard password Secret unusable")
	// errKeyNotOurs: the mgr's cephx key existed before the controller made one.
	errKeyNotOurs = errors.New("cephx key not created by this controller")
)

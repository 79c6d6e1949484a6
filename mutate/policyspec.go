// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import "github.com/rook-mgr/mgr-webhook/api/v1alpha1"

// What a policy says is the MgrPolicy API's (api/v1alpha1 owns the types,
// their schema markers and DeepCopy); mutate reads them under these names.
type (
	PolicySpec               = v1alpha1.PolicySpec
	Exemption                = v1alpha1.Exemption
	ImagePolicy              = v1alpha1.ImagePolicy
	RookValues               = v1alpha1.RookValues
	ServerAddrInitContainers = v1alpha1.ServerAddrInitContainers
	LivenessProbe            = v1alpha1.LivenessProbe
	StartupProbe             = v1alpha1.StartupProbe
	HandOver                 = v1alpha1.HandOver
	Placement                = v1alpha1.Placement
	Action                   = v1alpha1.Action
	Rule                     = v1alpha1.Rule
)

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package kustomized builds a kustomization with kustomize's library, in
// process: the version kubectl kustomize embeds (sigs.k8s.io/kustomize/api
// in go.mod, the one k8s.io/kubectl requires) with kubectl's options.
// test/integration/manifests' TestKustomizeLibraryBuildsAsKubectl proves the two build
// the same bytes, so that the tests which only read a build need no kubectl
// (make mutation runs them for every change of the YAML, without a cluster)
// and skip its start-up.
package kustomized

import (
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Build builds the kustomization in dir as kubectl kustomize dir does.
func Build(dir string) ([]byte, error) {
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy // kubectl kustomize's default
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	return m.AsYaml()
}

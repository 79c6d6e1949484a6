// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package golden is the completion's golden corpus, read one way by every
// suite that checks it (mutate, webhook, inject, mgrctl through the API
// server): each input of mutate/testdata and each shipped mgr example
// (manifests/examples/*-mgr.yaml), with the golden file of its completion and
// the policy file it is completed under, if it has its own.
package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Case is one input of the corpus, its paths joined to the root given.
type Case struct {
	// Name is the input's file name without .yaml; a shipped example's is
	// prefixed "example-".
	Name string
	// Input is the mgr Deployment to complete.
	Input string
	// Golden is what completing it gives (mutate's -update rewrites it).
	Golden string
	// Policy is the policy file it is completed under; "" for the default
	// policy.
	Policy string
	// Example is true for a shipped example.
	Example bool
}

// Cases lists the corpus under the repository root root (".." from a
// package directory).
func Cases(root string) ([]Case, error) {
	testdata := filepath.Join(root, "mutate", "testdata")
	inputs, err := filepath.Glob(filepath.Join(testdata, "*.yaml"))
	if err != nil {
		return nil, err
	}
	examples, err := filepath.Glob(filepath.Join(root, "manifests", "examples", "*-mgr.yaml"))
	if err != nil {
		return nil, err
	}
	var cases []Case
	for i, in := range append(inputs, examples...) {
		stem := strings.TrimSuffix(in, ".yaml")
		if strings.HasSuffix(stem, ".golden") || strings.HasSuffix(stem, ".policy") {
			continue
		}
		c := Case{Name: filepath.Base(stem), Input: in, Golden: stem + ".golden.yaml", Example: i >= len(inputs)}
		if c.Example {
			c.Name = "example-" + c.Name
			c.Golden = filepath.Join(testdata, c.Name+".golden.yaml")
		}
		if _, err := os.Stat(stem + ".policy.yaml"); err == nil {
			c.Policy = stem + ".policy.yaml"
		}
		cases = append(cases, c)
	}
	if len(cases) < 5 || len(examples) == 0 {
		return nil, fmt.Errorf("the golden corpus under %s holds %d inputs, %d of them examples: give the repository root", root, len(cases), len(examples))
	}
	return cases, nil
}

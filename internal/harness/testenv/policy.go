// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/policy"
)

// MgrPolicyCRD is the MgrPolicy CustomResourceDefinition of the release, for
// APIServerOptions.CRDs.
func MgrPolicyCRD() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "manifests", "base", "policy", "generated", "mgr.ceph.rook.io_mgrpolicies.yaml"), nil
}

// PolicyScheme knows client-go's kinds and MgrPolicy.
func PolicyScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

// AcceptPolicies runs the controller's policy Watcher for MgrPolicy
// "default" in this process, as mgr-bootstrap's ServiceAccount (the RBAC of
// manifests/base must be applied), until ctx ends: it accepts each valid
// spec (condition Accepted), which the ValidatingAdmissionPolicy mgr-policy
// then judges by.
func AcceptPolicies(ctx context.Context, a *APIServer) error {
	scheme, err := PolicyScheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(a.ConfigAs(ServiceAccountUser("mgr-webhook-system", "mgr-bootstrap")), ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		// One per API server; a process may start several (bench/apiserver).
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return err
	}
	w := &policy.Watcher{Client: mgr.GetClient(), Name: "default", Store: policy.NewStore(mutate.DefaultPolicy(), "built-in"),
		Operation: v1alpha1.OperationController, Conditions: true}
	if err := w.SetupWithManager(mgr); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Println("policy watcher:", err)
		}
	}()
	return nil
}

// SetMgrPolicy makes spec MgrPolicy default's spec (creating it) and waits
// until a Watcher (AcceptPolicies) has accepted it (condition Accepted at its
// generation), so mgr-policy judges by it. It returns the policy Go reads
// from spec.
func SetMgrPolicy(ctx context.Context, cl client.Client, spec mutate.PolicySpec) (*mutate.Policy, error) {
	p, errs := mutate.PolicyFromSpec(&spec, nil)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	mp := &v1alpha1.MgrPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	err := cl.Get(ctx, client.ObjectKeyFromObject(mp), mp)
	mp.Spec = spec
	switch {
	case apierrors.IsNotFound(err):
		err = cl.Create(ctx, mp)
	case err == nil:
		err = cl.Update(ctx, mp)
	}
	if err != nil {
		return nil, err
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		got := &v1alpha1.MgrPolicy{}
		err := cl.Get(ctx, client.ObjectKeyFromObject(mp), got)
		return err == nil && got.Status.ObservedGeneration == mp.Generation && got.Status.PolicyHash == p.Hash() && accepted(got), nil
	}); err != nil {
		return nil, fmt.Errorf("MgrPolicy default not accepted: %w", err)
	}
	return p, nil
}

// accepted reports whether mp's Accepted condition is True at its generation.
func accepted(mp *v1alpha1.MgrPolicy) bool {
	c := meta.FindStatusCondition(mp.Status.Conditions, v1alpha1.ConditionAccepted)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == mp.Generation
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package uninstall is the step before an uninstall of the controller
// (mgr-bootstrap --release-mgrs, the chart's pre-delete hook, and mgrctl
// release): it lets every mgr Deployment go.
package uninstall

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// Job is what runs before an uninstall: with the controller gone, its
// finalizer would hold every mgr Deployment, and so its namespace, for
// ever. It stops the controller (its Deployment scaled to zero, and waited
// on until no pod of it is left), then removes the finalizer from every mgr
// Deployment. Nothing else changes: cephx keys stay in Ceph, keyrings and
// Services in the cluster, and the mgrs keep running.
type Job struct {
	// Client runs as the controller's ServiceAccount (it may patch mgr
	// Deployments' finalizers, and, through the uninstall's Role, scale its
	// own Deployment).
	Client client.Client
	// Namespace and Deployment name the controller's Deployment.
	Namespace, Deployment string
	// Namespaces are those of the mgrs (a namespaced install's); all when empty.
	Namespaces []string
	// Wait bounds the wait for the controller's pods to be gone; a pod still
	// there after it (a node that is down) does not stop the step.
	Wait time.Duration
	// DryRun sends every write as a server-side dry run (the API server
	// judges it, nothing is stored) and waits for nothing: Report says what
	// a run would change.
	DryRun bool
}

// Client is the client Job needs (client-go's kinds) for cfg.
func Client(cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// Report is what Run did.
type Report struct {
	// LetGo are the mgr Deployments (namespace/name) whose finalizer was removed.
	LetGo []string
	// PodsLeft are the controller's pods still there when Wait ran out.
	PodsLeft int
	// Scaled is whether the controller's Deployment was there to scale.
	Scaled bool
}

// Run stops the controller and releases the mgrs.
func (r Job) Run(ctx context.Context) (Report, error) {
	var rep Report
	if r.DryRun {
		r.Client = client.NewDryRunClient(r.Client)
	}
	scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Deployment}}
	d := &appsv1.Deployment{ObjectMeta: scale.ObjectMeta}
	zero := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`))
	err := r.Client.SubResource("scale").Patch(ctx, d, zero, &client.SubResourcePatchOptions{SubResourceBody: scale})
	if client.IgnoreNotFound(err) != nil {
		return rep, fmt.Errorf("scaling Deployment %s/%s to 0: %w", r.Namespace, r.Deployment, err)
	}
	rep.Scaled = err == nil
	// The pods of the controller's Deployment: those its selector matches.
	var sel client.MatchingLabels
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(d), d); err == nil && d.Spec.Selector != nil {
		sel = d.Spec.Selector.MatchLabels
	}
	if len(sel) > 0 && !r.DryRun {
		_ = wait.PollUntilContextTimeout(ctx, time.Second, r.Wait, true, func(ctx context.Context) (bool, error) {
			var pods corev1.PodList
			if err := r.Client.List(ctx, &pods, client.InNamespace(r.Namespace), sel); err != nil {
				return false, nil // retried until Wait
			}
			rep.PodsLeft = len(pods.Items)
			return rep.PodsLeft == 0, nil
		})
	}
	namespaces := r.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		var mgrs appsv1.DeploymentList
		if err := r.Client.List(ctx, &mgrs, client.InNamespace(ns), client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
			return rep, fmt.Errorf("listing mgr Deployments: %w", err)
		}
		for i := range mgrs.Items {
			m := &mgrs.Items[i]
			if !controllerutil.ContainsFinalizer(m, contract.FinalizerCephxKey) {
				continue
			}
			// The lock keeps another finalizer written meanwhile.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := r.Client.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
					return err
				}
				patch := client.MergeFromWithOptions(m.DeepCopy(), client.MergeFromWithOptimisticLock{})
				if !controllerutil.RemoveFinalizer(m, contract.FinalizerCephxKey) {
					return nil
				}
				return r.Client.Patch(ctx, m, patch)
			})
			if client.IgnoreNotFound(err) != nil {
				return rep, fmt.Errorf("releasing %s/%s: %w", m.Namespace, m.Name, err)
			}
			rep.LetGo = append(rep.LetGo, m.Namespace+"/"+m.Name)
		}
	}
	return rep, nil
}

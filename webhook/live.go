// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// LiveLookup answers what the webhooks must not take from a cache or from
// the request itself: whether a CephCluster owner reference names a live
// CephCluster (the API server stores any owner reference a writer sets), and
// a mgr Deployment the cache has not seen yet.
type LiveLookup interface {
	// CephClusterLive reports whether namespace holds the CephCluster ref
	// names, with ref's UID.
	CephClusterLive(ctx context.Context, namespace string, ref metav1.OwnerReference) (bool, error)
	// Deployment reads a Deployment's metadata; nil when there is none.
	Deployment(ctx context.Context, namespace, name string) (metav1.Object, error)
}

// RBAC: a CephCluster's and a Deployment's metadata, by name.
//
// +kubebuilder:rbac:groups=ceph.rook.io,resources=cephclusters,verbs=get

// MetadataLookup implements LiveLookup with metadata-only GETs.
type MetadataLookup struct {
	Client metadata.Interface
}

// NewMetadataLookup reads with cfg (the webhook's own identity).
func NewMetadataLookup(cfg *rest.Config) (*MetadataLookup, error) {
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &MetadataLookup{Client: mc}, nil
}

// CephClusterLive implements LiveLookup. A CephCluster that is not there
// (none of that name or UID, or no CephCluster API at all) is not live;
// any other error is returned, and the caller fails closed.
func (l *MetadataLookup) CephClusterLive(ctx context.Context, namespace string, ref metav1.OwnerReference) (bool, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != contract.RookAPIGroup {
		return false, nil
	}
	res := gv.WithResource("cephclusters")
	m, err := l.Client.Resource(res).Namespace(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cannot verify owner CephCluster %s/%s: %w", namespace, ref.Name, err)
	}
	return m.UID == ref.UID, nil
}

// Deployment implements LiveLookup.
func (l *MetadataLookup) Deployment(ctx context.Context, namespace, name string) (metav1.Object, error) {
	m, err := l.Client.Resource(appsv1.SchemeGroupVersion.WithResource("deployments")).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// onceLive asks a LiveLookup at most once per CephCluster owner: one
// request's old and new object usually name the same owner.
type onceLive struct {
	LiveLookup
	seen map[types.UID]bool
}

func (o *onceLive) CephClusterLive(ctx context.Context, namespace string, ref metav1.OwnerReference) (bool, error) {
	if v, ok := o.seen[ref.UID]; ok {
		return v, nil
	}
	v, err := o.LiveLookup.CephClusterLive(ctx, namespace, ref)
	if err == nil {
		if o.seen == nil {
			o.seen = map[types.UID]bool{}
		}
		o.seen[ref.UID] = v
	}
	return v, err
}

// governsLive reports whether the policy binds o, in namespace ns (the
// request's: a created object may not carry it), given whether o is a mgr
// Deployment the policy does not exempt (candidate, decided once per
// request): mutate.Policy.Governs with a CephCluster owner checked live. An
// error means such an owner could not be checked.
func governsLive(ctx context.Context, live LiveLookup, ns string, o metav1.Object, candidate bool) (bool, error) {
	if !candidate {
		return false, nil
	}
	rookOwned := false
	if ref := contract.RookOwner(o); ref != nil {
		ok, err := live.CephClusterLive(ctx, ns, *ref)
		if err != nil {
			return false, err
		}
		rookOwned = ok
	}
	return !rookOwned, nil // p.Governs of a mgr it does not exempt
}

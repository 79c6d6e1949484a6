// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package webhook adapts the pure mgr completion and validation of package
// mutate to Kubernetes admission: it decodes requests, looks up the
// namespace's Ceph cluster in an informer cache, builds JSON patches and
// denials, and counts outcomes.
package webhook

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

// ClusterLookup finds the Ceph cluster of a namespace.
type ClusterLookup interface {
	// Lookup returns the namespace's ClusterInfo, or a *MissingClusterObjectsError.
	Lookup(namespace string) (mutate.ClusterInfo, error)
}

// MgrLookup finds a mgr Deployment's metadata by name.
type MgrLookup interface {
	MgrDeployment(namespace, name string) (metav1.Object, bool)
}

// MissingClusterObjectsError names the cluster objects a namespace lacks, or
// says that the namespace is not one this webhook serves (--namespaces).
type MissingClusterObjectsError struct {
	Namespace string
	Missing   []string
	// Served lists the namespaces of a namespaced install when Namespace is
	// not among them.
	Served []string
}

func (e *MissingClusterObjectsError) Error() string {
	if len(e.Served) > 0 {
		return fmt.Sprintf("namespace %q is not one of the Ceph namespaces this install serves (%s); add it to the install's namespaces (chart value cephNamespaces, flag --namespaces)",
			e.Namespace, strings.Join(e.Served, ", "))
	}
	return fmt.Sprintf("namespace %q is not a Ceph cluster: missing %s; create them (Rook's operator does) before the mgr",
		e.Namespace, strings.Join(e.Missing, ", "))
}

// clusterObject is one object that makes a namespace a Ceph cluster.
type clusterObject struct {
	name     string
	describe string // how a user recognises it in an error
	informer cache.SharedIndexInformer
}

// namespaceInformers watch one namespace, or every namespace (metav1.NamespaceAll).
type namespaceInformers struct {
	conf        cache.SharedIndexInformer
	objects     []clusterObject
	deployments cache.SharedIndexInformer
}

func (n *namespaceInformers) hasSynced() bool {
	if !n.conf.HasSynced() || !n.deployments.HasSynced() {
		return false
	}
	for _, o := range n.objects {
		if !o.informer.HasSynced() {
			return false
		}
	}
	return true
}

// ClusterInfoCache answers Lookup from informers that watch only the named
// cluster objects (a field selector per name), never all Secrets, and no
// Secret that carries a key: the fsid comes from the ceph.conf of ConfigMap
// rook-ceph-config (the file every mgr mounts), which is cached reduced to
// that fsid; Secret rook-ceph-config (mon addresses, no key) is cached as
// metadata, to tell a user it is missing before a pod fails on it. The admin
// keyring is the bootstrap controller's to read and report. It also caches the
// metadata of mgr Deployments, for the scale subresource, whose requests carry
// no labels. A namespaced install (--namespaces) runs one set of informers per
// Ceph namespace, so that a RoleBinding in each is all the RBAC it needs.
type ClusterInfoCache struct {
	// byNamespace holds the informers of each served namespace, or of all
	// under metav1.NamespaceAll.
	byNamespace map[string]*namespaceInformers
	// releases caches the CephReleases (newReleaseInformer).
	releases cache.SharedIndexInformer
	start    []func(<-chan struct{})
}

// RBAC: the two named cluster objects, and mgr Deployments' metadata. List and
// watch are allowed by name because every informer lists with a metadata.name
// field selector. In a namespaced install RoleBindings in each Ceph namespace
// bind this ClusterRole; the metrics endpoint's tokenreviews and
// subjectaccessreviews are ClusterRole mgr-metrics-auth's
// (internal/securemetrics).
//
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch,resourceNames=rook-ceph-config
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch,resourceNames=rook-ceph-config
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch

// NewClusterInfoCache builds the informers of namespaces (all when empty);
// Start runs them.
func NewClusterInfoCache(cfg *rest.Config, namespaces ...string) (*ClusterInfoCache, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	byName := func(name string) func(*metav1.ListOptions) {
		return func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}
	}
	c := &ClusterInfoCache{byNamespace: map[string]*namespaceInformers{}}
	releases, startReleases, err := newReleaseInformer(cfg)
	if err != nil {
		return nil, err
	}
	c.releases, c.start = releases, append(c.start, startReleases)
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		n := &namespaceInformers{}
		confFactory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns), informers.WithTweakListOptions(byName(contract.ConfigMapName)))
		n.conf = confFactory.Core().V1().ConfigMaps().Informer()
		if err := n.conf.SetTransform(keepOnlyFSID); err != nil {
			return nil, err
		}
		c.start = append(c.start, confFactory.Start)

		secretFactory := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, ns, byName(contract.ConfigSecretName))
		n.objects = append(n.objects, clusterObject{
			name:     contract.ConfigSecretName,
			describe: fmt.Sprintf("Secret %q (keys %s, %s)", contract.ConfigSecretName, contract.ConfigSecretMonHostKey, contract.ConfigSecretMembersKey),
			informer: secretFactory.ForResource(corev1.SchemeGroupVersion.WithResource("secrets")).Informer(),
		})
		c.start = append(c.start, secretFactory.Start)

		mgrs := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, ns, func(o *metav1.ListOptions) {
			o.LabelSelector = labels.SelectorFromSet(labels.Set{contract.LabelApp: contract.AppName}).String()
		})
		n.deployments = mgrs.ForResource(appsv1.SchemeGroupVersion.WithResource("deployments")).Informer()
		c.start = append(c.start, mgrs.Start)
		c.byNamespace[ns] = n
	}
	return c, nil
}

// informers of namespace, or nil when the install does not serve it.
func (c *ClusterInfoCache) informers(namespace string) *namespaceInformers {
	if n, ok := c.byNamespace[metav1.NamespaceAll]; ok {
		return n
	}
	return c.byNamespace[namespace]
}

// keepOnlyFSID reduces the cluster's ConfigMap to the fsid of its ceph.conf.
// It must be idempotent: the informer may transform an object it already
// transformed (a relist replaces what the store holds).
func keepOnlyFSID(obj any) (any, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return obj, nil // cache.DeletedFinalStateUnknown and the like
	}
	fsid, reduced := cm.Data[fsidKey]
	if !reduced {
		fsid = fsidFromCephConf(cm.Data[contract.ConfigMapConfKey])
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: cm.Namespace, ResourceVersion: cm.ResourceVersion, UID: cm.UID},
		Data:       map[string]string{fsidKey: fsid},
	}, nil
}

// fsidKey holds the parsed fsid in the cached, reduced ConfigMap. It is not a
// valid ConfigMap key, so no real ConfigMap can pass for a reduced one.
const fsidKey = "[global] fsid"

// Start runs the informers until ctx ends (a manager.Runnable).
func (c *ClusterInfoCache) Start(ctx context.Context) error {
	for _, start := range c.start {
		start(ctx.Done())
	}
	<-ctx.Done()
	return nil
}

// NeedLeaderElection: every replica answers admissions from its own cache.
func (c *ClusterInfoCache) NeedLeaderElection() bool { return false }

// HasSynced reports whether every informer has listed once.
func (c *ClusterInfoCache) HasSynced() bool {
	for _, n := range c.byNamespace {
		if !n.hasSynced() {
			return false
		}
	}
	return true
}

// WaitForSync blocks until HasSynced or ctx ends.
func (c *ClusterInfoCache) WaitForSync(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), c.HasSynced)
}

// Lookup implements ClusterLookup from the cache; it makes no API call.
func (c *ClusterInfoCache) Lookup(namespace string) (mutate.ClusterInfo, error) {
	info := mutate.ClusterInfo{Namespace: namespace}
	n := c.informers(namespace)
	if n == nil {
		// Only a namespaced cache has no informers for a namespace.
		return info, &MissingClusterObjectsError{Namespace: namespace, Served: slices.Sorted(maps.Keys(c.byNamespace))}
	}
	var missing []string
	obj, ok, _ := n.conf.GetIndexer().GetByKey(namespace + "/" + contract.ConfigMapName)
	if cm, isConfigMap := obj.(*corev1.ConfigMap); ok && isConfigMap && cm.Data[fsidKey] != "" {
		info.FSID = cm.Data[fsidKey]
	} else {
		missing = append(missing, fmt.Sprintf("ConfigMap %q (key %s, with fsid in its [global] section)", contract.ConfigMapName, contract.ConfigMapConfKey))
	}
	for _, o := range n.objects {
		if _, ok, _ := o.informer.GetIndexer().GetByKey(namespace + "/" + o.name); !ok {
			missing = append(missing, o.describe)
		}
	}
	if len(missing) > 0 {
		return info, &MissingClusterObjectsError{Namespace: namespace, Missing: missing}
	}
	obj, _, _ = c.releases.GetIndexer().GetByKey(namespace) // cluster-scoped: keyed by name
	release, _ := obj.(*v1alpha1.CephRelease)
	info.Upgrade = upgradeFacts(release, time.Now())
	return info, nil
}

// MgrDeployment returns the cached metadata of the mgr Deployment
// namespace/name, or false when there is no such mgr Deployment.
func (c *ClusterInfoCache) MgrDeployment(namespace, name string) (metav1.Object, bool) {
	n := c.informers(namespace)
	if n == nil {
		return nil, false
	}
	obj, ok, _ := n.deployments.GetIndexer().GetByKey(namespace + "/" + name)
	if !ok {
		return nil, false
	}
	m, isMeta := obj.(*metav1.PartialObjectMetadata)
	return m, isMeta
}

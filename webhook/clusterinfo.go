// Package webhook adapts the pure mgr completion and validation of package
// mutate to Kubernetes admission: it decodes requests, looks up the
// namespace's Ceph cluster in an informer cache, builds JSON patches and
// denials, and counts outcomes.
package webhook

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rook-mgr/mgr-webhook/mutate"
)

// ClusterLookup finds the Ceph cluster of a namespace.
type ClusterLookup interface {
	// Lookup returns the namespace's ClusterInfo, or a *MissingClusterObjectsError.
	Lookup(namespace string) (mutate.ClusterInfo, error)
}

// MissingClusterObjectsError names the cluster objects a namespace lacks.
type MissingClusterObjectsError struct {
	Namespace string
	Missing   []string
}

func (e *MissingClusterObjectsError) Error() string {
	return fmt.Sprintf("namespace %q is not a Ceph cluster: missing %s; create them (Rook's operator does) before the mgr",
		e.Namespace, strings.Join(e.Missing, ", "))
}

// clusterObject is one object that makes a namespace a Ceph cluster.
type clusterObject struct {
	name     string
	describe string // how a user recognises it in an error
	informer cache.SharedIndexInformer
}

// ClusterInfoCache answers Lookup from informers that watch only the named
// cluster objects (a field selector per name), never all Secrets. The mon
// Secret is cached reduced to its fsid; the others as metadata only, so no
// key material is held in memory.
type ClusterInfoCache struct {
	mon     cache.SharedIndexInformer
	objects []clusterObject
	start   []func(<-chan struct{})
}

// RBAC: only the named cluster objects. List and watch are allowed by name
// because every informer lists with a metadata.name field selector.
//
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch,resourceNames=rook-ceph-mon;rook-ceph-config;rook-ceph-admin-keyring
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch,resourceNames=rook-ceph-config

// NewClusterInfoCache builds the informers; Start runs them.
func NewClusterInfoCache(cfg *rest.Config) (*ClusterInfoCache, error) {
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
	c := &ClusterInfoCache{}

	monFactory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(byName(mutate.MonSecretName)))
	c.mon = monFactory.Core().V1().Secrets().Informer()
	if err := c.mon.SetTransform(keepOnlyFSID); err != nil {
		return nil, err
	}
	c.start = append(c.start, monFactory.Start)

	secrets := corev1.SchemeGroupVersion.WithResource("secrets")
	configMaps := corev1.SchemeGroupVersion.WithResource("configmaps")
	for _, o := range []struct {
		name, describe string
		isConfigMap    bool
	}{
		{mutate.ConfigSecretName, fmt.Sprintf("Secret %q (keys %s, %s)", mutate.ConfigSecretName, mutate.ConfigSecretMonHostKey, mutate.ConfigSecretMembersKey), false},
		{mutate.ConfigMapName, fmt.Sprintf("ConfigMap %q (key %s)", mutate.ConfigMapName, mutate.ConfigMapConfKey), true},
		{mutate.AdminKeyringSecretName, fmt.Sprintf("Secret %q (key %s)", mutate.AdminKeyringSecretName, mutate.KeyringKey), false},
	} {
		f := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, metav1.NamespaceAll, byName(o.name))
		gvr := secrets
		if o.isConfigMap {
			gvr = configMaps
		}
		c.objects = append(c.objects, clusterObject{name: o.name, describe: o.describe, informer: f.ForResource(gvr).Informer()})
		c.start = append(c.start, f.Start)
	}
	return c, nil
}

// keepOnlyFSID drops everything of the mon Secret but its fsid: the Secret also
// holds the mon and admin keys, which this process must never hold.
func keepOnlyFSID(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil // cache.DeletedFinalStateUnknown and the like
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, ResourceVersion: s.ResourceVersion, UID: s.UID},
		Data:       map[string][]byte{mutate.MonSecretFSIDKey: s.Data[mutate.MonSecretFSIDKey]},
	}, nil
}

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
	if !c.mon.HasSynced() {
		return false
	}
	for _, o := range c.objects {
		if !o.informer.HasSynced() {
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
	var missing []string
	info := mutate.ClusterInfo{Namespace: namespace}
	obj, ok, _ := c.mon.GetIndexer().GetByKey(namespace + "/" + mutate.MonSecretName)
	if s, isSecret := obj.(*corev1.Secret); ok && isSecret && len(s.Data[mutate.MonSecretFSIDKey]) > 0 {
		info.FSID = string(s.Data[mutate.MonSecretFSIDKey])
	} else {
		missing = append(missing, fmt.Sprintf("Secret %q (key %s)", mutate.MonSecretName, mutate.MonSecretFSIDKey))
	}
	for _, o := range c.objects {
		if _, ok, _ := o.informer.GetIndexer().GetByKey(namespace + "/" + o.name); !ok {
			missing = append(missing, o.describe)
		}
	}
	if len(missing) > 0 {
		return info, &MissingClusterObjectsError{Namespace: namespace, Missing: missing}
	}
	return info, nil
}

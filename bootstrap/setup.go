// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/bootstrap/audit"
	"github.com/rook-mgr/mgr-webhook/bootstrap/cluster"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/bootstrap/recovery"
	"github.com/rook-mgr/mgr-webhook/bootstrap/releases"
	"github.com/rook-mgr/mgr-webhook/bootstrap/roles"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/policy"
)

var (
	reconciles = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mgr_bootstrap_reconciles_total", Help: "Reconciles of mgr Deployments.",
	})
	apiWrites = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mgr_bootstrap_api_writes_total", Help: "Kubernetes API writes (create, patch) made by the bootstrap controller.",
	})
)

func init() { metrics.Registry.MustRegister(reconciles, apiWrites) }

// CacheOptions restrict the manager's cache to what the controller needs:
// objects labelled app=rook-ceph-mgr, in namespaces when any are named (a
// namespaced install, whose RBAC is RoleBindings there), else in all, with
// no managedFields. Secrets are watched as metadata only (the API server
// sends no data: the controller reads a key by name, uncached, when it needs
// one), so no one who can label a Secret grows the controller's memory by
// its size; it never caches other Secrets.
func CacheOptions(namespaces ...string) cache.Options {
	mgrObjects := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{contract.LabelApp: contract.AppName})}
	var only map[string]cache.Config
	for _, ns := range namespaces {
		if only == nil {
			only = map[string]cache.Config{}
		}
		only[ns] = cache.Config{}
	}
	return cache.Options{DefaultNamespaces: only, DefaultTransform: cache.TransformStripManagedFields(), ByObject: map[client.Object]cache.ByObject{
		&appsv1.Deployment{}:            mgrObjects,
		&corev1.Pod{}:                   mgrObjects,
		&corev1.Secret{}:                mgrObjects,
		&corev1.Service{}:               mgrObjects,
		&policyv1.PodDisruptionBudget{}: mgrObjects,
	}}
}

// RBAC of the controller; its cache watches only objects labelled
// app=rook-ceph-mgr, and it reads the cluster Secrets by name. Owner
// references with blockOwnerDeletion (SetControllerReference) need update on
// deployments/finalizers where OwnerReferencesPermissionEnforcement is on.
//
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=apps,resources=deployments/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// Patch (and, for the PDB, delete) only by name: the cluster's two Services
// and its PDB. Delete of Services cannot be narrowed by name (the per-mgr
// Services of earlier versions are named by mgr id); the confinement policy
// (manifests/base/confinement) allows it only on Services mgr Deployments own.
//
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=patch,resourceNames=rook-ceph-mgr;rook-ceph-mgr-dashboard
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create
// A key rotation patches a mgr's keyring Secret (names vary by mgr id; the
// confinement policy allows the keyring data of such a Secret and nothing else).
//
// +kubebuilder:rbac:groups="",resources=secrets,verbs=patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=patch;delete,resourceNames=rook-ceph-mgr-pdb
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=mgr-webhook-system,resources=leases,verbs=get;create;update

// Setup wires the controller into mgr, the one place it is wired
// (cmd/mgr-bootstrap and every test harness call it): the reconciler on mgr's
// cached client, uncached reader and event recorder, its watches, and /healthz
// and /readyz. mgr must be built with CacheOptions.
func Setup(mgr ctrl.Manager, o Options, cephClient Ceph, maxConcurrent int) error {
	r := &Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder(contract.ControllerName),
		Options:   o,
		Clusters:  cluster.New(mgr.GetAPIReader(), cephClient, o.MonNetworks, o.CephRetryMax),
	}
	r.Ceph = r.Clusters.Ceph()
	r.status = &mgrstatus.Store{Client: r.Client, Reader: r.APIReader, Wrote: apiWrites.Inc}
	if err := r.SetupWithManager(mgr, maxConcurrent); err != nil {
		return err
	}
	if err := mgr.Add(r.status.KeyLoader(o.Namespace)); err != nil {
		return err
	}
	if err := mgr.Add(&roles.Watcher{Client: r.Client, Recorder: r.Recorder, Clusters: r.Clusters,
		Interval: orDefault(o.RoleInterval, DefaultOptions().RoleInterval), Workers: orDefault(o.RoleWorkers, DefaultOptions().RoleWorkers), Wrote: apiWrites.Inc}); err != nil {
		return err
	}
	var drift func(ns string) []audit.OptionDrift
	if o.ReleaseInterval > 0 {
		if err := v1alpha1.AddToScheme(mgr.GetScheme()); err != nil {
			return err
		}
		k := &releases.Keeper{Client: r.Client, Clusters: r.Clusters, Ceph: r.Ceph, Interval: o.ReleaseInterval, Namespaces: o.Namespaces,
			Refresh: orDefault(o.ReleaseRefresh, DefaultOptions().ReleaseRefresh), Wrote: apiWrites.Inc}
		watch := &optionWatch{Client: r.Client, Recorder: r.Recorder, Ceph: r.Ceph,
			Options: func() (map[string]v1alpha1.ModuleOptionValues, bool) {
				return r.moduleOptions(), r.Policy.Current().RestoreModuleOptions
			}, Applied: r.applied}
		k.Observers = append(k.Observers, watch)
		drift = watch.Drift
		if o.ModuleFailoverInterval > 0 {
			k.Observers = append(k.Observers, &recovery.Recovery{Client: r.Client, Recorder: r.Recorder, Ceph: r.Ceph, Interval: o.ModuleFailoverInterval})
		}
		if err := mgr.Add(k); err != nil {
			return err
		}
	}
	if o.Policy != nil && o.AuditInterval > 0 {
		if err := mgr.Add(&audit.Auditor{Client: r.Client, APIReader: r.APIReader, Recorder: r.Recorder,
			Policy: o.Policy, Interval: o.AuditInterval, ReportLimit: o.AuditReportLimit, ModuleOptionDrift: drift}); err != nil {
			return err
		}
	}
	if o.PolicyName != "" {
		if err := v1alpha1.AddToScheme(mgr.GetScheme()); err != nil {
			return err
		}
		w := &policy.Watcher{Client: mgr.GetClient(), Name: o.PolicyName, Store: o.Policy,
			Operation: v1alpha1.OperationController, Pod: o.Pod, Conditions: true, Recorder: r.Recorder}
		if err := w.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	mgrPhases.watch(mgr.GetCache(), mgr.Elected(), r.status.Ready, r.status.Sealed)
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("ping", healthz.Ping)
}

// SetupWithManager registers the controller: mgr Deployments, the Secrets
// they own and the cluster's Services (repaired when edited or deleted), and
// their pods (modules wait for readiness).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	b := ctrl.NewControllerManagedBy(mgr)
	if r.Policy != nil {
		// A changed policy (modules, choices, adoption) is every mgr's.
		changes, changed := make(chan event.GenericEvent), r.Policy.Subscribe()
		b = b.WatchesRawSource(source.Channel(changes, handler.EnqueueRequestsFromMapFunc(r.deploymentsOfNamespace)))
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-changed:
				}
				select {
				case <-ctx.Done():
					return nil
				case changes <- event.GenericEvent{Object: &v1alpha1.MgrPolicy{}}: // cluster-scoped: every namespace
				}
			}
		})); err != nil {
			return err
		}
	}
	// A cluster that answers again (its breaker closed: bootstrap/cluster)
	// is every one of its mgrs' at once. The send never blocks a ceph call:
	// a notice dropped while the queue is full leaves that mgr to its own
	// retry, at most CephRetryMax away.
	answered := make(chan event.GenericEvent, 64)
	r.Clusters.OnAnswer(func(ns string) {
		select {
		case answered <- event.GenericEvent{Object: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}}:
		default:
		}
	})
	b = b.WatchesRawSource(source.Channel(answered, handler.EnqueueRequestsFromMapFunc(r.deploymentsOfNamespace)))
	return b.
		Named(contract.ControllerName).
		For(&appsv1.Deployment{}, builder.WithPredicates(predicate.Funcs{UpdateFunc: specOrIntentChanged})).
		Owns(&corev1.Secret{}, builder.OnlyMetadata).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(r.deploymentsOfNamespace),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: clusterObjectEdited})).
		Watches(&policyv1.PodDisruptionBudget{}, handler.EnqueueRequestsFromMapFunc(r.deploymentsOfNamespace),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: clusterObjectEdited})).
		// A mgr created or deleted changes how many the cluster runs (its PDB);
		// a changed modules annotation changes the cluster's module set.
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.deploymentsOfNamespace),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: modulesAnnotationChanged})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.deploymentsOfPod)).
		// A key Ceph newly reports insecure is a due rotation of its mgr.
		Watches(&v1alpha1.CephRelease{}, handler.EnqueueRequestsFromMapFunc(r.deploymentsOfCluster),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: insecureKeysChanged, DeleteFunc: func(event.DeleteEvent) bool { return false }})).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: maxConcurrent,
			// Errors only: a reconcile that failed is retried from 1 s, doubling
			// up to 5 minutes. A cluster that does not answer is no error here:
			// its mgrs requeue on the cluster's clock (unavailableRetry).
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, 5*time.Minute),
		}).
		Complete(r)
}

// specOrIntentChanged ignores the controller's own status writes (and the
// deployment controller's revision): only a change of spec, labels or user
// annotations, of finalizers or owners, or a deletion matters. A status write
// bumps the generation too, so the generation alone would bring every write
// back as a reconcile, and a failing step whose message varies would loop.
func specOrIntentChanged(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*appsv1.Deployment)
	n, ok2 := e.ObjectNew.(*appsv1.Deployment)
	if !ok1 || !ok2 {
		return true
	}
	return n.DeletionTimestamp != nil ||
		!contract.IntentUnchanged(o, n) ||
		!slices.Equal(o.Finalizers, n.Finalizers) ||
		contract.LeftAlone(o) != contract.LeftAlone(n)
}

// clusterObjectEdited: a cluster Service or PDB changed where the controller
// may need to repair it (spec, labels). The owner references each mgr adds
// bring no reconcile of every mgr of the namespace.
func clusterObjectEdited(e event.UpdateEvent) bool {
	if !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) {
		return true
	}
	switch o := e.ObjectOld.(type) {
	case *corev1.Service:
		n, ok := e.ObjectNew.(*corev1.Service)
		return !ok || !equality.Semantic.DeepEqual(o.Spec, n.Spec)
	case *policyv1.PodDisruptionBudget:
		n, ok := e.ObjectNew.(*policyv1.PodDisruptionBudget)
		return !ok || !equality.Semantic.DeepEqual(o.Spec, n.Spec)
	}
	return true
}

// modulesAnnotationChanged: the cluster's module set may have changed.
func modulesAnnotationChanged(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()
	ov, ook := o[contract.AnnotationModules]
	nv, nok := n[contract.AnnotationModules]
	return ov != nv || ook != nok
}

// deploymentsOfNamespace maps a cluster object (a Service every mgr owns) to
// every mgr Deployment of its namespace.
func (r *Reconciler) deploymentsOfNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	list := &appsv1.DeploymentList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingLabels{contract.LabelApp: contract.AppName}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, d := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&d)})
	}
	return reqs
}

// deploymentsOfCluster maps a CephRelease (named after its cluster's
// namespace) to that namespace's mgr Deployments.
func (r *Reconciler) deploymentsOfCluster(ctx context.Context, o client.Object) []reconcile.Request {
	return r.deploymentsOfNamespace(ctx, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: o.GetName()}})
}

// insecureKeysChanged: only a change of the mgr keys Ceph reports insecure
// matters to the mgrs (the rest is read on demand).
func insecureKeysChanged(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*v1alpha1.CephRelease)
	n, ok2 := e.ObjectNew.(*v1alpha1.CephRelease)
	return ok1 && ok2 && !slices.Equal(o.Status.InsecureMgrKeys, n.Status.InsecureMgrKeys)
}

// deploymentsOfPod maps a mgr pod to the Deployments of its mgr id.
func (r *Reconciler) deploymentsOfPod(ctx context.Context, o client.Object) []reconcile.Request {
	id := o.GetLabels()[contract.LabelMgrID]
	if id == "" {
		return nil
	}
	list := &appsv1.DeploymentList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingLabels{contract.LabelMgrID: id}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, d := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&d)})
	}
	return reqs
}

// orDefault is v when set (positive), else def.
func orDefault[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

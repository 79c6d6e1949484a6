// Package bootstrap is the controller that makes a completed mgr Deployment
// runnable and useful, as Rook's operator does: it creates the mgr's cephx
// keyring Secret and its metrics and dashboard Services, enables the mgr
// modules once the mgr pod is Ready and Ceph lists the mgr, and removes the
// cephx key when the Deployment goes.
package bootstrap

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

// Ceph is what the controller asks of a Ceph cluster (*ceph.Runner).
type Ceph interface {
	GetOrCreateKey(ctx context.Context, conn ceph.Conn, entity string, caps []string) (string, error)
	GetKey(ctx context.Context, conn ceph.Conn, entity string) (string, error)
	SetCaps(ctx context.Context, conn ceph.Conn, entity string, caps []string) error
	RemoveKey(ctx context.Context, conn ceph.Conn, entity string) error
	MgrDump(ctx context.Context, conn ceph.Conn) (ceph.MgrMap, error)
	MgrModules(ctx context.Context, conn ceph.Conn) (ceph.Modules, error)
	EnableModule(ctx context.Context, conn ceph.Conn, module string) error
	SetOrchestratorBackend(ctx context.Context, conn ceph.Conn, backend string) error
	ConfigKeyExists(ctx context.Context, conn ceph.Conn, key string) (bool, error)
	ConfigSet(ctx context.Context, conn ceph.Conn, who, option, value string) error
	DashboardSelfSignedCert(ctx context.Context, conn ceph.Conn) error
	DashboardSetUser(ctx context.Context, conn ceph.Conn, user, role string, password []byte) error
}

var _ Ceph = &ceph.Runner{}

// Options configure the controller.
type Options struct {
	// Caps of a mgr's cephx key.
	Caps []string
	// Modules to enable, unless a Deployment overrides them by annotation.
	Modules []string
	// OrchestratorBackend is set once the rook module is on ("" to skip).
	OrchestratorBackend string
	// ModuleTimeout bounds the retries of one module step while the mgr restarts.
	ModuleTimeout time.Duration
	// RetryInterval is the first wait between those retries.
	RetryInterval time.Duration
	// FinalizerTimeout is how long a deleted mgr waits for Ceph to remove its
	// key before the controller lets go and says so.
	FinalizerTimeout time.Duration
	// WaitForMgr is how often to look again while Ceph does not list the mgr.
	WaitForMgr time.Duration
}

// DefaultCaps are the caps of a mgr key: Rook's keyring template.
var DefaultCaps = []string{"mon", "allow profile mgr", "mds", "allow *", "osd", "allow *"}

// SeedCaps are the seed's caps (`allow *` everywhere), offered as an option.
var SeedCaps = []string{"mon", "allow *", "mds", "allow *", "osd", "allow *"}

// DefaultOptions are the seed's choices.
func DefaultOptions() Options {
	return Options{
		Caps:                DefaultCaps,
		Modules:             []string{"orchestrator_cli", "rook", "prometheus", "dashboard"},
		OrchestratorBackend: "rook",
		ModuleTimeout:       3 * time.Minute,
		RetryInterval:       2 * time.Second,
		FinalizerTimeout:    2 * time.Minute,
		WaitForMgr:          5 * time.Second,
	}
}

// moduleAliases: a module of the seed's era and its successor, which later
// releases keep always on (orchestrator_cli became orchestrator in Octopus).
var moduleAliases = map[string]string{"orchestrator_cli": "orchestrator"}

// Reconciler bootstraps mgr Deployments.
type Reconciler struct {
	// Client reads from the controller's cache (objects labelled app=rook-ceph-mgr).
	Client client.Client
	// APIReader reads the namespace's cluster Secrets by name, uncached: the
	// controller never caches Secrets it did not create.
	APIReader client.Reader
	Ceph      Ceph
	Recorder  recorder.EventRecorder
	Options

	// written holds, per Deployment, the generation of our last status write.
	// A cached Deployment older than that is a stale cache, not news: acting
	// on it would repeat ceph writes already done.
	written sync.Map // types.NamespacedName -> int64
}

// Reasons of the Events the controller records on the Deployment.
const (
	ReasonKeyringCreated    = "KeyringCreated"
	ReasonKeyCapsRepaired   = "KeyCapsRepaired"
	ReasonServicesReady     = "ServicesReady"
	ReasonServiceRepaired   = "ServiceRepaired"
	ReasonModulesEnabled    = "ModulesEnabled"
	ReasonModuleUnavailable = "ModuleUnavailable"
	ReasonDashboardReady    = "DashboardReady"
	ReasonCephUnavailable   = "CephUnavailable"
	ReasonClusterMissing    = "CephClusterMissing"
	ReasonBootstrapFailed   = "BootstrapFailed"
	ReasonKeyRemoved        = "KeyRemoved"
	ReasonKeyRemovalAbandon = "KeyRemovalAbandoned"
	ReasonKeyKept           = "KeyKept"
	ReasonNotOwned          = "NotOwned"
	ReasonReleased          = "Released"
	ReasonDashboardPassword = "DashboardPasswordInvalid"
)

var (
	// errClusterMissing marks a namespace without its cluster objects.
	errClusterMissing = errors.New("cluster objects missing")
	// errNotOwned marks an object of ours by name that another owner holds.
	errNotOwned = errors.New("not owned by this Deployment")
	// errDashboardPassword marks a password Secret the controller cannot use.
	errDashboardPassword = errors.New("dashboard password Secret unusable")
)

// Reconcile runs the bootstrap steps that are not done yet. A bootstrapped
// mgr costs only cache reads: no ceph call and no API write.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	reconciles.Inc()
	d := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, d); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	id := mutate.MgrID(d)
	if !mutate.IsMgr(d) || id == "" {
		return ctrl.Result{}, nil
	}
	log := logf.FromContext(ctx).WithValues("mgr", id)
	ctx = logf.IntoContext(ctx, log)
	if g, ok := r.written.Load(req.NamespacedName); ok && d.Generation < g.(int64) {
		// Our own status writes bring no event (the predicate drops them),
		// and this request may stand for a pending retry: look again shortly.
		log.V(1).Info("cache behind our last status write; looking again shortly", "cached", d.Generation, "written", g)
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if mutate.LeftAlone(d) {
		return ctrl.Result{}, r.release(ctx, d)
	}
	if d.DeletionTimestamp != nil {
		return r.finalize(ctx, d, id)
	}
	if !controllerutil.ContainsFinalizer(d, mutate.FinalizerCephxKey) {
		patch := client.MergeFrom(d.DeepCopy())
		controllerutil.AddFinalizer(d, mutate.FinalizerCephxKey)
		if err := r.Client.Patch(ctx, d, patch); err != nil {
			return ctrl.Result{}, err
		}
	}

	st := readStatus(d)
	next := st
	next.LastError, next.ObservedGeneration = "", d.Generation
	b := &bootstrapRun{r: r, d: d, id: id}

	if err := r.ensureServices(ctx, d, id); err != nil {
		return r.failed(ctx, d, next, err)
	}
	if err := b.ensureKeyring(ctx); err != nil {
		return r.failed(ctx, d, next, err)
	}

	want := wantedModules(d, r.Modules)
	if st.Phase == PhaseReady && st.ObservedGeneration == d.Generation && slices.Equal(st.wanted(), sortedCopy(want)) {
		return ctrl.Result{}, r.saveStatus(ctx, d, next) // at rest
	}

	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(d.Namespace),
		client.MatchingLabels{mutate.LabelApp: mutate.AppName, mutate.LabelMgrID: id}); err != nil {
		return ctrl.Result{}, err
	}
	if !podReady(pods.Items) {
		next.Phase = PhaseWaitingForPod
		return ctrl.Result{}, r.saveStatus(ctx, d, next) // the pod watch brings us back
	}
	if len(want) == 0 {
		// No module wanted: nothing to ask Ceph once the pod runs.
		next.Phase, next.Modules, next.Unavailable, next.Dashboard = PhaseReady, nil, nil, false
		return ctrl.Result{}, r.saveStatus(ctx, d, next)
	}
	conn, err := b.conn(ctx)
	if err != nil {
		return r.failed(ctx, d, next, err)
	}
	mgrMap, err := r.Ceph.MgrDump(ctx, conn)
	if err != nil {
		return r.failed(ctx, d, next, err)
	}
	if !mgrMap.Available || !mgrMap.Knows(id) {
		next.Phase = PhaseWaitingForMgr
		return ctrl.Result{RequeueAfter: r.WaitForMgr}, r.saveStatus(ctx, d, next)
	}
	if err := b.enableModules(ctx, conn, want, st, &next); err != nil {
		return r.failed(ctx, d, next, err)
	}
	next.Phase = PhaseReady
	return ctrl.Result{}, r.saveStatus(ctx, d, next)
}

// wanted is what a Ready status covers: the modules it found on plus those the
// release lacks, sorted.
func (s Status) wanted() []string {
	return sortedCopy(append(append([]string(nil), s.Modules...), s.Unavailable...))
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return slices.Compact(c)
}

// failed records a failure: an Event, the status, and an error for the
// workqueue's exponential backoff (never a hot loop).
func (r *Reconciler) failed(ctx context.Context, d *appsv1.Deployment, st Status, err error) (ctrl.Result, error) {
	st.LastError = err.Error()
	switch {
	case errors.Is(err, errClusterMissing):
		st.Phase = PhaseError
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonClusterMissing, "Bootstrap", "%v", err)
	case errors.Is(err, errNotOwned):
		st.Phase = PhaseError
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonNotOwned, "Bootstrap", "%v", err)
	case errors.Is(err, errDashboardPassword):
		st.Phase = PhaseError
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonDashboardPassword, "ConfigureDashboard", "%v", err)
	case ceph.IsUnavailable(err):
		st.Phase = PhaseCephUnavailable
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonCephUnavailable, "Bootstrap", "Ceph cluster %s did not answer; retrying with backoff: %v", d.Namespace, err)
	default:
		st.Phase = PhaseError
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonBootstrapFailed, "Bootstrap", "%v", err)
	}
	if serr := r.saveStatus(ctx, d, st); serr != nil {
		logf.FromContext(ctx).Error(serr, "saving status")
	}
	return ctrl.Result{}, err
}

// saveStatus patches the status annotation only when it changed.
//
// The API server bumps a Deployment's generation on every annotation change
// (annotations are copied to ReplicaSets), so writing the status moves the
// generation from g to g+1. The patch carries the resourceVersion it was
// computed from, so g+1 is exactly the generation written, and recording it as
// observed keeps the next reconcile at rest instead of chasing its own writes.
func (r *Reconciler) saveStatus(ctx context.Context, d *appsv1.Deployment, st Status) error {
	if d.Annotations[mutate.AnnotationBootstrapStatus] == st.encode() {
		return nil
	}
	observed := d.Generation
	cur := d
	for attempt := 0; ; attempt++ {
		if cur.Generation != observed {
			return nil // the spec changed while we worked: its own reconcile follows
		}
		write := st
		if write.ObservedGeneration == observed {
			write.ObservedGeneration++
		}
		patch := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[mutate.AnnotationBootstrapStatus] = write.encode()
		apiWrites.Inc()
		err := r.Client.Patch(ctx, cur, patch)
		if err == nil {
			r.written.Store(client.ObjectKeyFromObject(cur), cur.Generation)
			return nil
		}
		// Status writes of the deployment controller move the resourceVersion
		// during a long module step: read again rather than redo the step.
		if !apierrors.IsConflict(err) || attempt == 4 {
			return err
		}
		fresh := &appsv1.Deployment{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(d), fresh); err != nil {
			return err
		}
		cur = fresh
	}
}

// ensureServices creates the metrics and dashboard Services, and repairs them
// when edited or deleted (the Owns watch brings us back).
func (r *Reconciler) ensureServices(ctx context.Context, d *appsv1.Deployment, id string) error {
	created := 0
	for _, want := range desiredServices(d, id) {
		have := &corev1.Service{}
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), have)
		switch {
		case apierrors.IsNotFound(err):
			if err := controllerutil.SetControllerReference(d, want, r.Client.Scheme()); err != nil {
				return err
			}
			apiWrites.Inc()
			if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			created++
		case err != nil:
			return err
		case !metav1.IsControlledBy(have, d):
			return notOwned(d, "Service", have)
		case serviceDrifted(have, want):
			patch := client.MergeFrom(have.DeepCopy())
			have.Spec.Selector, have.Spec.Type, have.Spec.Ports = want.Spec.Selector, want.Spec.Type, want.Spec.Ports
			for k, v := range want.Labels {
				metav1.SetMetaDataLabel(&have.ObjectMeta, k, v)
			}
			apiWrites.Inc()
			if err := r.Client.Patch(ctx, have, patch); err != nil {
				return err
			}
			r.Recorder.Eventf(d, have, corev1.EventTypeNormal, ReasonServiceRepaired, "Repair", "Service %s restored to its desired spec", have.Name)
		}
	}
	if created > 0 {
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonServicesReady, "Create", "Services %s (metrics :%d) and %s (dashboard :%d) created",
			mutate.MetricsServiceName(id), mutate.PortMetrics, mutate.DashboardServiceName(id), mutate.PortDashboard)
	}
	return nil
}

// bootstrapRun holds what one reconcile of one mgr learns lazily.
type bootstrapRun struct {
	r    *Reconciler
	d    *appsv1.Deployment
	id   string
	c    *ceph.Conn
	cerr error
}

// conn reads the namespace's mon_host and admin keyring, once per reconcile
// and only when a ceph call is needed.
func (b *bootstrapRun) conn(ctx context.Context) (ceph.Conn, error) {
	if b.c != nil || b.cerr != nil {
		return derefConn(b.c), b.cerr
	}
	ns := b.d.Namespace
	cfg, keyring := &corev1.Secret{}, &corev1.Secret{}
	var missing []string
	if err := b.r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: mutate.ConfigSecretName}, cfg); err != nil {
		if !apierrors.IsNotFound(err) {
			b.cerr = err
			return ceph.Conn{}, err
		}
		missing = append(missing, "Secret "+mutate.ConfigSecretName)
	}
	if err := b.r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: mutate.AdminKeyringSecretName}, keyring); err != nil {
		if !apierrors.IsNotFound(err) {
			b.cerr = err
			return ceph.Conn{}, err
		}
		missing = append(missing, "Secret "+mutate.AdminKeyringSecretName)
	}
	if len(missing) == 0 && (len(cfg.Data[mutate.ConfigSecretMonHostKey]) == 0 || len(keyring.Data[mutate.KeyringKey]) == 0) {
		missing = append(missing, fmt.Sprintf("keys %s/%s and %s/%s", mutate.ConfigSecretName, mutate.ConfigSecretMonHostKey, mutate.AdminKeyringSecretName, mutate.KeyringKey))
	}
	if len(missing) > 0 {
		b.cerr = fmt.Errorf("%w: namespace %s lacks %v", errClusterMissing, ns, missing)
		return ceph.Conn{}, b.cerr
	}
	b.c = &ceph.Conn{Cluster: ns, MonHost: string(cfg.Data[mutate.ConfigSecretMonHostKey]), AdminKeyring: keyring.Data[mutate.KeyringKey]}
	return *b.c, nil
}

func derefConn(c *ceph.Conn) ceph.Conn {
	if c == nil {
		return ceph.Conn{}
	}
	return *c
}

// ensureKeyring creates Secret rook-ceph-mgr-<id>-keyring from the cluster's
// key for mgr.<id>, repairing the key's caps when they differ (EINVAL).
func (b *bootstrapRun) ensureKeyring(ctx context.Context) error {
	d, id, r := b.d, b.id, b.r
	have := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: mutate.KeyringSecretName(id)}, have)
	if err == nil {
		if !metav1.IsControlledBy(have, d) {
			return notOwned(d, "Secret", have)
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	conn, err := b.conn(ctx)
	if err != nil {
		return err
	}
	entity := "mgr." + id
	key, err := r.Ceph.GetOrCreateKey(ctx, conn, entity, r.Caps)
	if ceph.IsInvalid(err) {
		// The key exists with other caps: make them ours rather than fail forever.
		if err = r.Ceph.SetCaps(ctx, conn, entity, r.Caps); err == nil {
			r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonKeyCapsRepaired, "Repair", "cephx key %s existed with other caps; caps set to %v", entity, r.Caps)
			key, err = r.Ceph.GetKey(ctx, conn, entity)
		}
	}
	if err != nil {
		return err
	}
	secret := keyringSecret(d, id, key, r.Caps)
	if err := controllerutil.SetControllerReference(d, secret, r.Client.Scheme()); err != nil {
		return err
	}
	apiWrites.Inc()
	if err := r.Client.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	r.Recorder.Eventf(d, secret, corev1.EventTypeNormal, ReasonKeyringCreated, "Create", "Secret %s holds the cephx key of %s", secret.Name, entity)
	return nil
}

// enableModules turns on the wanted modules this release has and can run,
// never toggling one already on; modules it lacks become a Warning Event.
func (b *bootstrapRun) enableModules(ctx context.Context, conn ceph.Conn, want []string, prev Status, next *Status) error {
	r, d := b.r, b.d
	mods, err := r.Ceph.MgrModules(ctx, conn)
	if err != nil {
		return err
	}
	on := map[string]bool{}
	for _, m := range append(slices.Clone(mods.AlwaysOn), mods.Enabled...) {
		on[m] = true
	}
	canRun := map[string]string{} // name -> why not ("" when it can)
	for _, m := range mods.Disabled {
		canRun[m.Name] = ""
		if !m.CanRun {
			canRun[m.Name] = "cannot run: " + m.ErrorString
		}
	}
	// Module options first: a module started with its ports set needs no restart.
	if slices.Contains(want, "prometheus") && !on["prometheus"] {
		port := containerPort(d, mutate.PortNameMetrics, mutate.PortMetrics)
		if err := r.Ceph.ConfigSet(ctx, conn, "mgr."+b.id, "mgr/prometheus/server_port", strconv.Itoa(int(port))); err != nil {
			return err
		}
	}
	dashboardPort := containerPort(d, mutate.PortNameDash, mutate.PortDashboard)
	if slices.Contains(want, "dashboard") && !on["dashboard"] {
		for _, kv := range [][2]string{{"mgr/dashboard/ssl", "true"}, {"mgr/dashboard/ssl_server_port", strconv.Itoa(int(dashboardPort))}} {
			if err := r.Ceph.ConfigSet(ctx, conn, "mgr."+b.id, kv[0], kv[1]); err != nil {
				return err
			}
		}
	}

	next.Modules, next.Unavailable = nil, nil
	var enabled []string
	for _, m := range want {
		name := m
		if alias, ok := moduleAliases[m]; ok && !on[m] {
			if _, has := canRun[m]; !has && on[alias] {
				name = alias // the successor is always on
			}
		}
		if on[name] {
			next.Modules = append(next.Modules, m)
			continue
		}
		why, known := canRun[name]
		if !known || why != "" {
			if !known {
				why = "this Ceph release has no such module"
			}
			next.Unavailable = append(next.Unavailable, m)
			if !slices.Contains(prev.Unavailable, m) {
				r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonModuleUnavailable, "EnableModule", "mgr module %s skipped: %s", m, why)
			}
			continue
		}
		// Enabling restarts the mgr: retry what a restarting mgr answers.
		if err := b.retry(ctx, func(ctx context.Context) error { return r.Ceph.EnableModule(ctx, conn, name) }); err != nil {
			return fmt.Errorf("enabling mgr module %s: %w", name, err)
		}
		on[name] = true
		enabled = append(enabled, m)
		next.Modules = append(next.Modules, m)
	}
	if r.OrchestratorBackend != "" && slices.Contains(enabled, r.OrchestratorBackend) {
		if err := b.retry(ctx, func(ctx context.Context) error {
			return r.Ceph.SetOrchestratorBackend(ctx, conn, r.OrchestratorBackend)
		}); err != nil {
			return fmt.Errorf("setting the orchestrator backend: %w", err)
		}
	}
	if len(enabled) > 0 {
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonModulesEnabled, "EnableModule", "mgr modules enabled: %v", enabled)
	}
	next.Dashboard = prev.Dashboard && on["dashboard"]
	if on["dashboard"] && slices.Contains(want, "dashboard") && !next.Dashboard {
		if err := b.configureDashboard(ctx, conn, dashboardPort); err != nil {
			return fmt.Errorf("configuring the dashboard: %w", err)
		}
		next.Dashboard = true
	}
	return nil
}

// configureDashboard makes the dashboard usable: a self-signed certificate
// when it has none, and the admin user with the password kept in Secret
// rook-ceph-dashboard-password.
func (b *bootstrapRun) configureDashboard(ctx context.Context, conn ceph.Conn, port int32) error {
	r, d := b.r, b.d
	hasCert, err := r.Ceph.ConfigKeyExists(ctx, conn, "mgr/dashboard/crt")
	if err != nil {
		return err
	}
	if !hasCert {
		if err := b.retry(ctx, func(ctx context.Context) error { return r.Ceph.DashboardSelfSignedCert(ctx, conn) }); err != nil {
			return err
		}
	}
	password, err := r.dashboardPassword(ctx, d)
	if err != nil {
		return err
	}
	if err := b.retry(ctx, func(ctx context.Context) error {
		return r.Ceph.DashboardSetUser(ctx, conn, mutate.DashboardUser, "administrator", password)
	}); err != nil {
		return err
	}
	r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonDashboardReady, "ConfigureDashboard",
		"dashboard on https port %d; user %q, password in Secret %s", port, mutate.DashboardUser, mutate.DashboardPasswordSecretName)
	return nil
}

// dashboardPassword reads the namespace's dashboard password, creating the
// Secret with a random one first. The Secret belongs to the cluster (the
// namespace), not to one mgr, so it outlives any single mgr Deployment. A
// Secret without a password is someone else's to fix: the controller never
// overwrites it, and says which key is missing.
func (r *Reconciler) dashboardPassword(ctx context.Context, d *appsv1.Deployment) ([]byte, error) {
	key := client.ObjectKey{Namespace: d.Namespace, Name: mutate.DashboardPasswordSecretName}
	read := func() ([]byte, error) {
		s := &corev1.Secret{}
		if err := r.APIReader.Get(ctx, key, s); err != nil {
			return nil, err
		}
		if len(s.Data[mutate.DashboardPasswordKey]) == 0 {
			return nil, fmt.Errorf("%w: Secret %s exists without key %q; add the dashboard admin's password under %q, or delete the Secret so that the controller generates one",
				errDashboardPassword, key.Name, mutate.DashboardPasswordKey, mutate.DashboardPasswordKey)
		}
		return s.Data[mutate.DashboardPasswordKey], nil
	}
	password, err := read()
	if !apierrors.IsNotFound(err) {
		return password, err
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	password = []byte(base64.RawURLEncoding.EncodeToString(raw))
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: map[string]string{mutate.LabelApp: mutate.AppName, mutate.LabelRookCluster: d.Namespace}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{mutate.DashboardPasswordKey: password},
	}
	apiWrites.Inc()
	err = r.Client.Create(ctx, s)
	if apierrors.IsAlreadyExists(err) {
		return read() // another writer won: use theirs, once
	}
	if err != nil {
		return nil, err
	}
	return password, nil
}

// retry repeats a step while the mgr restarts (EINVAL, EBUSY, EAGAIN, no
// answer), with backoff, under ModuleTimeout (Rook's ExecuteCephCommandWithRetry).
func (b *bootstrapRun) retry(ctx context.Context, step func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, b.r.ModuleTimeout)
	defer cancel()
	var last error
	backoff := wait.Backoff{Duration: b.r.RetryInterval, Factor: 1.5, Jitter: 0.2, Steps: 1 << 20, Cap: 15 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		last = step(ctx)
		if last == nil {
			return true, nil
		}
		if ceph.IsRetryable(last) {
			return false, nil
		}
		return false, last
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// finalize removes the cephx key of a deleted mgr, giving up after
// FinalizerTimeout so that a lost cluster never holds the deletion hostage
// (Rook left keys behind, rook#9860: we say so instead).
func (r *Reconciler) finalize(ctx context.Context, d *appsv1.Deployment, id string) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(d, mutate.FinalizerCephxKey) {
		return ctrl.Result{}, nil
	}
	b := &bootstrapRun{r: r, d: d, id: id}
	entity := "mgr." + id
	user, err := r.keyUser(ctx, d, id)
	if err != nil {
		return ctrl.Result{}, err
	}
	if user != "" {
		// Not ours to remove: another Deployment runs this mgr, or holds its keyring.
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonKeyKept, "Delete", "cephx key %s kept: %s still uses it", entity, user)
		return ctrl.Result{}, r.removeFinalizer(ctx, d)
	}
	conn, err := b.conn(ctx)
	if err == nil {
		err = r.Ceph.RemoveKey(ctx, conn, entity)
	}
	if err == nil {
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonKeyRemoved, "Delete", "cephx key %s removed from Ceph", entity)
	} else {
		if remaining := time.Until(d.DeletionTimestamp.Add(r.FinalizerTimeout)); remaining > 0 {
			r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonCephUnavailable, "Delete",
				"cannot remove cephx key %s yet (%v); retrying until %s", entity, err, d.DeletionTimestamp.Add(r.FinalizerTimeout).UTC().Format(time.RFC3339))
			// Retry on our own clock, never past the deadline.
			return ctrl.Result{RequeueAfter: min(remaining, 10*time.Second)}, nil
		}
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonKeyRemovalAbandon, "Delete",
			"gave up removing cephx key %s after %s (%v); remove it by hand: ceph auth rm %s", entity, r.FinalizerTimeout, err, entity)
	}
	return ctrl.Result{}, r.removeFinalizer(ctx, d)
}

func (r *Reconciler) removeFinalizer(ctx context.Context, d *appsv1.Deployment) error {
	if !controllerutil.ContainsFinalizer(d, mutate.FinalizerCephxKey) {
		return nil
	}
	patch := client.MergeFrom(d.DeepCopy())
	controllerutil.RemoveFinalizer(d, mutate.FinalizerCephxKey)
	apiWrites.Inc()
	return client.IgnoreNotFound(r.Client.Patch(ctx, d, patch))
}

// keyUser names what still uses the cephx key of mgr id besides the deleted
// Deployment d: another live Deployment of that mgr id in the namespace (ours,
// Rook's or anyone's), or a keyring Secret that another object controls. It
// reads from the API server, not the cache: a key removed in error cannot be
// given back.
func (r *Reconciler) keyUser(ctx context.Context, d *appsv1.Deployment, id string) (string, error) {
	list := &appsv1.DeploymentList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(d.Namespace), client.MatchingLabels{mutate.LabelMgrID: id}); err != nil {
		return "", err
	}
	for _, other := range list.Items {
		if other.UID != d.UID && other.DeletionTimestamp == nil && mutate.IsMgr(&other) {
			return "Deployment " + other.Name, nil
		}
	}
	s := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: mutate.KeyringSecretName(id)}, s)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if ref := metav1.GetControllerOf(s); ref != nil && ref.UID != d.UID {
		return fmt.Sprintf("Secret %s (controlled by %s %s)", s.Name, ref.Kind, ref.Name), nil
	}
	return "", nil
}

// release lets go of a Deployment that is no longer ours to manage (opted out
// or owned by a Rook CephCluster): its finalizer goes, and its key, keyring
// and Services stay as they are.
func (r *Reconciler) release(ctx context.Context, d *appsv1.Deployment) error {
	if !controllerutil.ContainsFinalizer(d, mutate.FinalizerCephxKey) {
		return nil
	}
	if err := r.removeFinalizer(ctx, d); err != nil {
		return err
	}
	r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonReleased, "Release",
		"no longer managed (label %s=false or a Rook CephCluster owner): finalizer removed; the cephx key, keyring Secret and Services are left as they are", mutate.LabelManaged)
	return nil
}

// notOwned is the error for an object that carries our name for mgr d but is
// controlled by something else (or nothing): the controller neither adopts
// nor changes it.
func notOwned(d *appsv1.Deployment, kind string, o metav1.Object) error {
	owner := "no controller"
	if ref := metav1.GetControllerOf(o); ref != nil {
		owner = fmt.Sprintf("%s %s", ref.Kind, ref.Name)
	}
	return fmt.Errorf("%w: %s %s belongs to %s, not to Deployment %s; the controller neither adopts nor changes it: delete it if it is stale, or delete this Deployment if it duplicates mgr %q",
		errNotOwned, kind, o.GetName(), owner, d.Name, mutate.MgrID(d))
}

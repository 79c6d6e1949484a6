// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/contract"
)

// TestMgrBootstrap follows mgr "a" of rook-ceph from creation to a usable
// mgr: keyring and Services first, modules only once the pod is Ready.
func TestMgrBootstrap(t *testing.T) {
	ctx := t.Context()
	c := cephs[nsMain]
	d := mgrDeployment(t, nsMain, "a", 0, nil)
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}

	// The keyring Secret holds exactly the cluster's key for mgr.a.
	secret := &corev1.Secret{}
	eventually(t, 30*time.Second, "keyring Secret", func(ctx context.Context) (bool, error) {
		return get(ctx, nsMain, "rook-ceph-mgr-a-keyring", secret) == nil, nil
	})
	key, err := c.GetKey(ctx, "mgr.a")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("[mgr.a]\n\tkey = %s\n\tcaps mon = \"allow profile mgr\"\n\tcaps mds = \"allow *\"\n\tcaps osd = \"allow *\"\n", key)
	if got := string(secret.Data["keyring"]); got != want {
		t.Errorf("keyring Secret:\n%s\nwant:\n%s", got, want)
	}
	assertOwnedBy(t, secret.OwnerReferences, d.Name)

	// The cluster's Services select its active mgr and target the named
	// container ports; every mgr owns them, none controls them.
	for name, port := range map[string]int32{contract.MetricsServiceName: 9283, contract.DashboardServiceName: 8443} {
		svc := &corev1.Service{}
		eventually(t, 10*time.Second, "Service "+name, func(ctx context.Context) (bool, error) {
			return get(ctx, nsMain, name, svc) == nil, nil
		})
		p := svc.Spec.Ports[0]
		if p.Port != port || p.TargetPort.Type != intstr.String || svc.Spec.Selector["mgr_role"] != "active" || svc.Spec.Selector["app"] != "rook-ceph-mgr" ||
			svc.Spec.Selector["rook_cluster"] != nsMain || svc.Spec.Selector["mgr"] != "" {
			t.Errorf("Service %s: ports %+v selector %v", name, svc.Spec.Ports, svc.Spec.Selector)
		}
		assertAmongOwners(t, svc.OwnerReferences, d.Name)
	}

	// No pod yet: the modules wait.
	waitPhase(t, nsMain, d.Name, mgrstatus.PhaseWaitingForPod, 20*time.Second)
	for _, m := range []string{"prometheus", "dashboard", "rook"} {
		if enabledModules(t, c)[m] {
			t.Fatalf("module %s enabled before the mgr pod was Ready", m)
		}
	}

	// One replica: kwok makes the pod Ready and the modules follow.
	scale(t, nsMain, d.Name, 1)
	st := waitPhase(t, nsMain, d.Name, mgrstatus.PhaseReady, 4*time.Minute)
	eventually(t, 20*time.Second, "mgr a's pod labelled mgr_role=active", func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := k8s.List(ctx, pods, client.InNamespace(nsMain), client.MatchingLabels{"mgr": "a", "mgr_role": "active"}); err != nil {
			return false, err
		}
		return len(pods.Items) > 0, nil
	})
	// Tentacle 20.2.2 to 20.2.4's rook module is broken (rook#18213): there
	// the controller leaves it off and sets no backend.
	rel := cephRelease(t)
	rookOff := rel.In(contract.RookModuleBroken)
	wantOn, backend := []string{"prometheus", "dashboard", "rook"}, "rook"
	if rookOff {
		wantOn, backend = wantOn[:2], ""
		if !slices.Contains(st.Unavailable, "rook") || enabledModules(t, c)["rook"] {
			t.Errorf("Ceph %s: status %+v, rook on: %v; want rook left off and unavailable", rel, st, enabledModules(t, c)["rook"])
		}
	}
	on := enabledModules(t, c)
	for _, m := range wantOn {
		if !on[m] {
			t.Errorf("ceph mgr module ls: %s not enabled (enabled: %v)", m, on)
		}
	}
	if !slices.Contains(st.Modules, "orchestrator_cli") || !st.Dashboard || st.ObservedGeneration == 0 || st.Backend != backend {
		t.Errorf("status %+v: want orchestrator_cli (always-on successor), dashboard done, backend %q, observedGeneration", st, backend)
	}
	// The plan was made for the release the mgr runs, and the backend is set.
	if installed := cephRelease(t); st.CephVersion != installed.String() {
		t.Errorf("status cephVersion %q, want the installed %v", st.CephVersion, installed)
	}
	if out, err := c.Ceph(ctx, "orch", "status"); rookOff {
		if err == nil || !strings.Contains(err.Error(), "No orchestrator configured") {
			t.Errorf("Ceph %s: ceph orch status: %s, %v; want no orchestrator", rel, out, err)
		}
	} else if err != nil || !strings.Contains(string(out), `"backend": "rook"`) && !strings.Contains(string(out), `"backend":"rook"`) {
		t.Errorf("ceph orch status: %s, %v; want backend rook", out, err)
	}
	reasons := eventReasons(t, nsMain, d.Name)
	for _, r := range []string{bootstrap.ReasonKeyringCreated, bootstrap.ReasonServicesReady, bootstrap.ReasonModulesEnabled, bootstrap.ReasonDashboardReady} {
		if reasons[r] == "" {
			t.Errorf("no %s Event (have %v)", r, reasons)
		}
	}
	for r, note := range reasons {
		if strings.Contains(note, key) {
			t.Errorf("Event %s carries the key", r)
		}
	}

	// The dashboard is usable: the admin user logs in with the Secret's password.
	pw := &corev1.Secret{}
	if err := get(ctx, nsMain, contract.DashboardPasswordSecretName, pw); err != nil {
		t.Fatal(err)
	}
	login, _ := json.Marshal(map[string]string{"username": "admin", "password": string(pw.Data["password"])})
	httpc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed by design
	eventually(t, 90*time.Second, "dashboard login", func(context.Context) (bool, error) {
		req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("https://127.0.0.1:%d/api/auth", c.DashboardPort), bytes.NewReader(login))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/vnd.ceph.api.v1.0+json")
		resp, err := httpc.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusCreated, fmt.Errorf("status %d", resp.StatusCode)
	})
	eventually(t, 60*time.Second, "prometheus metrics", func(context.Context) (bool, error) {
		resp, err := httpc.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", c.PrometheusPort))
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// TestQuietAtRest: a reconcile of a bootstrapped mgr makes no ceph call and
// no API write.
func TestQuietAtRest(t *testing.T) {
	ctx := t.Context()
	name := readyMgr(t, nsMain, "a", nil)
	cephCalls := reconcileCalls(t)
	writes := metric(t, "mgr_bootstrap_api_writes_total", nil)
	reconciles := metric(t, "mgr_bootstrap_reconciles_total", nil)

	d := &appsv1.Deployment{}
	if err := get(ctx, nsMain, name, d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Labels["touched"] = "yes" // passes the controller's predicate: a reconcile follows
	if err := k8s.Patch(ctx, d, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a reconcile", func(context.Context) (bool, error) {
		return metric(t, "mgr_bootstrap_reconciles_total", nil) > reconciles, nil
	})
	time.Sleep(time.Second)
	after := &appsv1.Deployment{}
	_ = get(ctx, nsMain, name, after)
	t.Logf("generation %d -> %d, status %s -> %s", d.Generation, after.Generation, d.Annotations[contract.AnnotationBootstrapStatus], after.Annotations[contract.AnnotationBootstrapStatus])
	if got := reconcileCalls(t); got != cephCalls {
		t.Errorf("%v ceph calls at rest (the CephRelease keeper's reads apart), want 0", got-cephCalls)
	}
	if got := metric(t, "mgr_bootstrap_api_writes_total", nil); got != writes {
		t.Errorf("%v API writes at rest, want 0", got-writes)
	}
}

func TestServicesHeal(t *testing.T) {
	ctx := t.Context()
	readyMgr(t, nsMain, "a", nil)
	old := &corev1.Service{}
	if err := get(ctx, nsMain, contract.MetricsServiceName, old); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "metrics Service recreated", func(ctx context.Context) (bool, error) {
		s := &corev1.Service{}
		return get(ctx, nsMain, contract.MetricsServiceName, s) == nil && s.UID != old.UID, nil
	})

	// A user's label and annotation stay through a repair of our fields.
	dash := &corev1.Service{}
	if err := get(ctx, nsMain, contract.DashboardServiceName, dash); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(dash.DeepCopy())
	dash.Spec.Ports[0].Port = 9999
	dash.Spec.Selector["mgr_role"] = "z"
	dash.Labels["team"] = "storage"
	dash.Annotations = map[string]string{"example.com/ingress": "dashboard"}
	if err := k8s.Patch(ctx, dash, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "dashboard Service repaired", func(ctx context.Context) (bool, error) {
		s := &corev1.Service{}
		return get(ctx, nsMain, contract.DashboardServiceName, s) == nil && s.Spec.Ports[0].Port == 8443 && s.Spec.Selector["mgr_role"] == "active", nil
	})
	if err := get(ctx, nsMain, contract.DashboardServiceName, dash); err != nil || dash.Labels["team"] != "storage" || dash.Annotations["example.com/ingress"] != "dashboard" {
		t.Errorf("the repair dropped the user's label or annotation: %v %v (%v)", dash.Labels, dash.Annotations, err)
	}
	waitEvent(t, nsMain, "rook-ceph-mgr-a", bootstrap.ReasonServiceRepaired, 10*time.Second)
}

// TestLegacyServicesMigrated: the per-mgr Services an earlier version created
// (controlled by the Deployment) are removed; a Service of that name that the
// Deployment does not control is left alone.
func TestLegacyServicesMigrated(t *testing.T) {
	ctx := t.Context()
	readyMgr(t, nsMain, "a", nil)
	d := &appsv1.Deployment{}
	if err := get(ctx, nsMain, "rook-ceph-mgr-a", d); err != nil {
		t.Fatal(err)
	}
	legacy := func(name string, controlled bool) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: nsMain,
			Labels: map[string]string{"app": "rook-ceph-mgr", "mgr": "a", "rook_cluster": nsMain}},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "rook-ceph-mgr", "mgr": "a"},
				Ports: []corev1.ServicePort{{Name: "http-metrics", Port: 9283, TargetPort: intstr.FromString("http-metrics")}}}}
		if controlled {
			if err := controllerutil.SetControllerReference(d, s, k8s.Scheme()); err != nil {
				t.Fatal(err)
			}
		}
		if err := k8s.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	legacy(contract.LegacyMetricsServiceName("a"), true)
	legacy(contract.LegacyDashboardServiceName("a"), false)
	eventually(t, 20*time.Second, "the controlled per-mgr Service removed", func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(get(ctx, nsMain, contract.LegacyMetricsServiceName("a"), &corev1.Service{})), nil
	})
	waitEvent(t, nsMain, "rook-ceph-mgr-a", bootstrap.ReasonServicesMigrated, 10*time.Second)
	time.Sleep(2 * time.Second)
	if err := get(ctx, nsMain, contract.LegacyDashboardServiceName("a"), &corev1.Service{}); err != nil {
		t.Errorf("a Service the Deployment does not control was touched: %v", err)
	}
	if err := k8s.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: contract.LegacyDashboardServiceName("a"), Namespace: nsMain}}); err != nil {
		t.Error(err)
	}
}

// TestForeignKeyLeftAsItIs: a mgr.<id> key that existed before the
// controller made one (another tool's mgr) is neither used, re-capped nor
// removed: the Deployment gets phase Error and a KeyNotOwned Event naming
// the choice, and deleting it keeps the key (KeyKept). In nsForeign the
// policy allows no adoption.
func TestForeignKeyLeftAsItIs(t *testing.T) {
	ctx := t.Context()
	c := cephs[nsMain] // nsForeign is a namespace of this cluster
	if _, err := c.Ceph(ctx, "auth", "get-or-create", "mgr.f", "mon", "allow *"); err != nil {
		t.Fatal(err)
	}
	defer c.Ceph(ctx, "auth", "rm", "mgr.f") //nolint:errcheck // cleanup
	before, err := c.Ceph(ctx, "auth", "get", "mgr.f")
	if err != nil {
		t.Fatal(err)
	}
	d := mgrDeployment(t, nsForeign, "f", 0, nil)
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	msg := waitEvent(t, nsForeign, d.Name, bootstrap.ReasonKeyNotOwned, 30*time.Second)
	if !strings.Contains(msg, "ceph auth rm mgr.f") || !strings.Contains(msg, "adoptExistingKeys") {
		t.Errorf("KeyNotOwned %q names neither way out", msg)
	}
	if s := waitPhase(t, nsForeign, d.Name, mgrstatus.PhaseError, 10*time.Second); s.KeyOwned {
		t.Errorf("status records a foreign key as ours: %+v", s)
	}
	if err := get(ctx, nsForeign, contract.KeyringSecretName("f"), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("a keyring Secret was made from a foreign key: %v", err)
	}
	if err := k8s.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, nsForeign, d.Name, bootstrap.ReasonKeyKept, 30*time.Second)
	eventually(t, 30*time.Second, "Deployment gone", func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(get(ctx, nsForeign, d.Name, &appsv1.Deployment{})), nil
	})
	after, err := c.Ceph(ctx, "auth", "get", "mgr.f")
	if err != nil || string(after) != string(before) {
		t.Errorf("the foreign key changed or went: %s (%v), was %s", after, err, before)
	}
}

// TestOwnKeyRepairedAndRemoved: a key the controller created, whose caps
// were changed by hand, is repaired when its keyring Secret is made again,
// and removed from Ceph with its Deployment; the garbage collector takes
// the Secret, and the cluster's Services lose the mgr as an owner.
func TestOwnKeyRepairedAndRemoved(t *testing.T) {
	ctx := t.Context()
	c := cephs[nsMain]
	d := mgrDeployment(t, nsMain, "x", 0, nil)
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{}
	eventually(t, 30*time.Second, "keyring Secret of mgr.x", func(ctx context.Context) (bool, error) {
		return get(ctx, nsMain, "rook-ceph-mgr-x-keyring", secret) == nil, nil
	})
	if _, err := c.Ceph(ctx, "auth", "caps", "mgr.x", "mon", "allow *"); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, nsMain, d.Name, bootstrap.ReasonKeyCapsRepaired, 30*time.Second)
	out, err := c.Ceph(ctx, "auth", "get", "mgr.x")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"mon":"allow profile mgr"`) {
		t.Errorf("caps not repaired: %s", out)
	}
	eventually(t, 30*time.Second, "keyring Secret of mgr.x again", func(ctx context.Context) (bool, error) {
		return get(ctx, nsMain, "rook-ceph-mgr-x-keyring", secret) == nil, nil
	})
	key, _ := c.GetKey(ctx, "mgr.x")
	if !strings.Contains(string(secret.Data["keyring"]), "key = "+key+"\n") {
		t.Error("the Secret does not hold the key")
	}

	// Deletion removes the key; the garbage collector takes Secret and Services.
	if err := k8s.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Deployment gone", func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(get(ctx, nsMain, d.Name, &appsv1.Deployment{})), nil
	})
	if _, err := c.GetKey(ctx, "mgr.x"); err == nil || !strings.Contains(err.Error(), "ENOENT") {
		t.Errorf("mgr.x key still in Ceph: %v", err)
	}
	eventually(t, 60*time.Second, "garbage collection of the keyring Secret", func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(get(ctx, nsMain, contract.KeyringSecretName("x"), &corev1.Secret{})), nil
	})
	// The cluster's Services stay for the namespace's other mgrs, without x.
	for _, name := range []string{contract.MetricsServiceName, contract.DashboardServiceName} {
		eventually(t, 60*time.Second, "mgr x gone from the owners of "+name, func(ctx context.Context) (bool, error) {
			svc := &corev1.Service{}
			if err := get(ctx, nsMain, name, svc); err != nil {
				return false, err
			}
			for _, ref := range svc.OwnerReferences {
				if ref.UID == d.UID {
					return false, nil
				}
			}
			return len(svc.OwnerReferences) > 0, nil
		})
	}
}

// TestUnreachableCluster: a mon that never answers gives a CephUnavailable
// Event and status. The first unanswered call opens the cluster's breaker:
// from then on only the role watcher's probe tries the cluster, on the
// cluster's clock (1 s, doubling), and the reconciles make no CLI call.
// Deletion is not held hostage.
func TestUnreachableCluster(t *testing.T) {
	ctx := t.Context()
	d := mgrDeployment(t, nsDown, "a", 0, nil)
	// The CLI's calls, and the role watcher's probes (`mgr stat` over a kept
	// connection) apart.
	unavailable := func(command string) float64 {
		labels := map[string]string{"result": "unavailable"}
		if command != "" {
			labels["command"] = command
		}
		return metric(t, "mgr_bootstrap_ceph_calls_total", labels)
	}
	cliCalls := func() float64 { return unavailable("") - unavailable("mgr stat") }
	beforeCLI, beforeProbes := cliCalls(), unavailable("mgr stat")
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, nsDown, d.Name, bootstrap.ReasonCephUnavailable, 30*time.Second)
	st := waitPhase(t, nsDown, d.Name, mgrstatus.PhaseCephUnavailable, 10*time.Second)
	if !strings.Contains(st.LastError, "unreachable") {
		t.Errorf("lastError %q", st.LastError)
	}
	time.Sleep(12 * time.Second)
	calls, probes := cliCalls()-beforeCLI, unavailable("mgr stat")-beforeProbes
	t.Logf("an unreachable cluster for ~15s: %v CLI calls, %v probes", calls, probes)
	// One CLI call opened the breaker; the reconciles that followed (each
	// requeued on the cluster's clock) made none.
	if calls != 1 {
		t.Errorf("%v CLI calls against an unreachable cluster in ~15s; want 1 (the breaker's first; the reconciles after it make none)", calls)
	}
	// The probes: 1 s, 2 s, 4 s, 8 s apart after each unanswered read, at
	// the role watcher's ticks. A hot loop would make dozens; none would
	// leave the breaker open for good.
	if probes < 1 || probes > 6 {
		t.Errorf("%v probes of an unreachable cluster in ~15s; want 1-6 (its clock)", probes)
	}

	// The cluster's Services were made before any ceph call; this is the
	// namespace's only mgr, so they go with it.
	for _, name := range []string{contract.MetricsServiceName, contract.DashboardServiceName} {
		if err := get(ctx, nsDown, name, &corev1.Service{}); err != nil {
			t.Errorf("Service %s of the unreachable cluster: %v", name, err)
		}
	}
	// The controller never reached the cluster, so it made no key: deletion
	// has nothing of its own to remove and is not held (TestCephMonOutage
	// holds a mgr whose key it made).
	if err := k8s.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Deployment released", func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(get(ctx, nsDown, d.Name, &appsv1.Deployment{})), nil
	})
	for _, name := range []string{contract.MetricsServiceName, contract.DashboardServiceName} {
		eventually(t, 60*time.Second, "Service "+name+" gone with the cluster's last mgr", func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(get(ctx, nsDown, name, &corev1.Service{})), nil
		})
	}
	if note := eventReasons(t, nsDown, d.Name)[bootstrap.ReasonKeyKept]; !strings.Contains(note, "did not create it") {
		t.Errorf("no %s Event saying the key is not the controller's: %q", bootstrap.ReasonKeyKept, note)
	}
}

// TestTwoClustersKeptApart: mgr "a" of ceph-east gets ceph-east's key and
// modules, with its own module list from the annotation; a module this
// release lacks is a Warning Event, not a failure.
func TestTwoClustersKeptApart(t *testing.T) {
	ctx := t.Context()
	east, main := cephs[nsEast], cephs[nsMain]
	mainKey, _ := main.GetKey(ctx, "mgr.a")
	d := mgrDeployment(t, nsEast, "a", 1, map[string]string{contract.AnnotationModules: "prometheus, influxdb2"})
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	st := waitPhase(t, nsEast, d.Name, mgrstatus.PhaseReady, 2*time.Minute)
	secret := &corev1.Secret{}
	if err := get(ctx, nsEast, "rook-ceph-mgr-a-keyring", secret); err != nil {
		t.Fatal(err)
	}
	eastKey, _ := east.GetKey(ctx, "mgr.a")
	if !strings.Contains(string(secret.Data["keyring"]), "key = "+eastKey+"\n") || eastKey == mainKey {
		t.Error("ceph-east's keyring Secret does not hold ceph-east's key")
	}
	if k, _ := main.GetKey(ctx, "mgr.a"); k != mainKey {
		t.Error("rook-ceph's mgr.a key changed")
	}
	on := enabledModules(t, east)
	if !on["prometheus"] || on["dashboard"] || on["rook"] {
		t.Errorf("ceph-east modules %v; want prometheus and no dashboard/rook (annotation)", on)
	}
	if !slices.Equal(st.Modules, []string{"prometheus"}) || !slices.Equal(st.Unavailable, []string{"influxdb2"}) || st.Dashboard {
		t.Errorf("status %+v", st)
	}
	if note := eventReasons(t, nsEast, d.Name)[bootstrap.ReasonModuleUnavailable]; !strings.Contains(note, "influxdb2") {
		t.Errorf("no %s Event for influxdb2: %q", bootstrap.ReasonModuleUnavailable, note)
	}
}

func scale(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := get(context.Background(), ns, name, d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = &replicas
	if err := k8s.Patch(context.Background(), d, patch); err != nil {
		t.Fatal(err)
	}
}

// assertAmongOwners: the Deployment owns the object, without controlling it
// (an object of the cluster that every mgr owns).
func assertAmongOwners(t *testing.T, refs []metav1.OwnerReference, name string) {
	t.Helper()
	for _, r := range refs {
		if r.Kind == "Deployment" && r.Name == name && (r.Controller == nil || !*r.Controller) {
			return
		}
	}
	t.Errorf("Deployment %s is not among the owners (as a non-controller): %v", name, refs)
}

func assertOwnedBy(t *testing.T, refs []metav1.OwnerReference, name string) {
	t.Helper()
	for _, r := range refs {
		if r.Kind == "Deployment" && r.Name == name && r.Controller != nil && *r.Controller {
			return
		}
	}
	t.Errorf("not owned by Deployment %s: %v", name, refs)
}

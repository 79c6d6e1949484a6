// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package policyapi tests MgrPolicy through a real kube-apiserver: the
// shipped CRD refuses a bad policy naming the field, and the webhook (as its
// ServiceAccount, with the shipped RBAC) and the controller follow a change
// live, keep the last good policy when the newest is invalid or deleted, and
// say so in the status, an Event and the metrics.
package policyapi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/bootstrap/audit"
	"github.com/rook-mgr/mgr-webhook/bootstrap/ceph"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/mutate"
	"github.com/rook-mgr/mgr-webhook/policy"
	"github.com/rook-mgr/mgr-webhook/test/internal/await"
	"github.com/rook-mgr/mgr-webhook/webhook"
)

const (
	ns            = "rook-ceph"
	webhookPod    = "mgr-webhook-7d9f-abcde"
	controllerPod = "mgr-bootstrap-5c8b-fghij"
)

// auditPolicy records the metadata (audit annotations included) of writes
// of Deployments.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    resources: [{group: apps, resources: [deployments]}]
    verbs: [create, update, patch]
  - level: None
`

var (
	auditLog string
	api      *testenv.APIServer
	k8s      client.Client
	root     string
	// webhookStore and controllerStore are what each component enforces.
	webhookStore, controllerStore *policy.Store
)

func TestMain(m *testing.M) { testenv.Main(m, "policyapi", run) }

func run(m *testing.M) (int, error) {
	var err error
	if root, err = testenv.RepoRoot(); err != nil {
		return 1, err
	}
	// The audit log keeps what an Audit action records.
	auditDir, err := os.MkdirTemp("", "policyapi-audit-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(auditDir)
	auditLog = filepath.Join(auditDir, "audit.log")
	if err := os.WriteFile(filepath.Join(auditDir, "policy.yaml"), []byte(auditPolicy), 0o600); err != nil {
		return 1, err
	}
	reports, err := testenv.OpenReportsCRDs()
	if err != nil {
		return 1, err
	}
	api, err = testenv.StartAPIServerWith(testenv.APIServerOptions{
		ShippedWebhooks: true,
		CRDs:            []string{filepath.Join(root, "manifests", "base", "policy", "generated", "mgr.ceph.rook.io_mgrpolicies.yaml"), reports},
		Args:            map[string]string{"audit-policy-file": filepath.Join(auditDir, "policy.yaml"), "audit-log-path": auditLog},
	})
	if err != nil {
		return 1, err
	}
	defer api.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	scheme, err := testenv.PolicyScheme()
	if err != nil {
		return 1, err
	}
	if k8s, err = client.New(api.Config, client.Options{Scheme: scheme}); err != nil {
		return 1, err
	}

	// The webhook as cmd/mgr-webhook wires it with --policy-name=default;
	// until a MgrPolicy is read, the built-in policy is in force.
	webhookStore = policy.NewStore(mutate.DefaultPolicy(), "built-in")
	clusters, err := testenv.ServeWebhooksWith(ctx, api, webhook.Options{Policy: webhookStore, PolicyName: "default", Pod: webhookPod})
	if err != nil {
		return 1, err
	}
	// The controller as cmd/mgr-bootstrap wires it, as its ServiceAccount.
	// Its policy Watcher and audit are under test here: no Ceph answers, so
	// the mgrs it sees stay unbootstrapped (their status says so).
	controllerStore = policy.NewStore(mutate.DefaultPolicy(), "built-in")
	mgr, err := ctrl.NewManager(api.ConfigAs(testenv.ServiceAccountUser("mgr-webhook-system", "mgr-bootstrap")), ctrl.Options{
		Scheme: scheme, Cache: bootstrap.CacheOptions(), Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return 1, err
	}
	opts := bootstrap.DefaultOptions()
	opts.Modules, opts.Policy, opts.PolicyName, opts.Pod = nil, controllerStore, "default", controllerPod
	opts.AuditInterval = time.Second
	if err := bootstrap.Setup(mgr, opts, &ceph.Runner{Binary: "/nonexistent/ceph"}, 1); err != nil {
		return 1, err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "controller manager:", err)
		}
	}()

	cluster := testenv.CephCluster{Namespace: ns, FSID: "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b", MonHost: "[v2:10.0.0.1:3300]", Members: "a",
		AdminKeyring: "[client.admin]\n\tkey = not-a-real-key\n"}
	if err := cluster.Create(ctx, k8s); err != nil {
		return 1, err
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := clusters.Lookup(ns)
		return err == nil, nil
	}); err != nil {
		return 1, fmt.Errorf("webhook cache never saw cluster %s: %w", ns, err)
	}
	return m.Run(), nil
}

// mgrWithImage is the shipped minimal mgr a running image.
func mgrWithImage(t *testing.T, image string) *appsv1.Deployment {
	t.Helper()
	return mgrOf(t, "a", image)
}

// admits is the API server's verdict on creating a mgr running image (a
// dry run: every admission webhook judges it, nothing is stored).
func admits(t *testing.T, image string) error {
	t.Helper()
	return k8s.Create(context.Background(), mgrWithImage(t, image), client.DryRunAll)
}

func get(t *testing.T) *v1alpha1.MgrPolicy {
	t.Helper()
	mp := &v1alpha1.MgrPolicy{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: "default"}, mp); err != nil {
		t.Fatal(err)
	}
	return mp
}

// update changes the MgrPolicy's spec and returns its new generation.
func update(t *testing.T, edit func(*mutate.PolicySpec)) int64 {
	t.Helper()
	var mp *v1alpha1.MgrPolicy
	// The replicas write the status meanwhile: retry on their resourceVersion.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mp = get(t)
		edit(&mp.Spec)
		return k8s.Update(context.Background(), mp)
	}); err != nil {
		t.Fatal(err)
	}
	return mp.Generation
}

// policyEvent reports whether MgrPolicy default has an Event of reason
// whose note holds text.
func policyEvent(ctx context.Context, reason, text string) (bool, error) {
	list := &eventsv1.EventList{}
	if err := k8s.List(ctx, list); err != nil {
		return false, err
	}
	for _, e := range list.Items {
		if e.Regarding.Kind == "MgrPolicy" && e.Regarding.Name == "default" && e.Reason == reason && strings.Contains(e.Note, text) {
			return true, nil
		}
	}
	return false, nil
}

// replica is a replica's status.byPod entry.
func replica(mp *v1alpha1.MgrPolicy, id string) *v1alpha1.PodStatus {
	for i := range mp.Status.ByPod {
		if mp.Status.ByPod[i].ID == id {
			return &mp.Status.ByPod[i]
		}
	}
	return nil
}

// stateIs reports whether mgr_policy_state of operation is state.
func stateIs(operation, state string) (bool, error) {
	v, err := testenv.CounterSum("mgr_policy_state", map[string]string{"operation": operation, "state": state})
	return v == 1, err
}

// TestBadPolicyRefusedByTheAPIServer: the CRD's schema refuses what the
// policy's validation would, naming the field, before any replica sees it.
func TestBadPolicyRefusedByTheAPIServer(t *testing.T) {
	cases := map[string]struct {
		spec  string
		field string
	}{
		"a release that is not one":      {`{images: {minimumCephVersion: sixteen}}`, "spec.images.minimumCephVersion"},
		"a relative dataDirHostPath":     {`{dataDirHostPath: var/lib/rook}`, "spec.dataDirHostPath"},
		"a negative connect timeout":     {`{serverAddrInitContainers: {connectTimeoutSeconds: -1}}`, "spec.serverAddrInitContainers.connectTimeoutSeconds"},
		"an exemption of no namespace":   {`{exemptions: [{namespace: Rook_Ceph}]}`, "spec.exemptions[0].namespace"},
		"a module choice that is none":   {`{moduleChoices: [dashboard, "rm -rf"]}`, "spec.moduleChoices[1]"},
		"a module that is none":          {`{modules: [Prometheus]}`, "spec.modules[0]"},
		"the mgr container as a sidecar": {`{sidecars: {mgr: {name: mgr, image: busybox}}}`, "spec.sidecars"},
		"a sidecar named otherwise":      {`{sidecars: {logs: {name: other, image: busybox}}}`, "spec.sidecars"},
		"a sidecar without an image":     {`{sidecars: {logs: {name: logs}}}`, "spec.sidecars"},
		"an unknown field":               {`{allowPrivilegedd: true}`, "spec.allowPrivilegedd"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var spec map[string]any
			if err := yaml.Unmarshal([]byte(tc.spec), &spec); err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "mgr.ceph.rook.io/v1alpha1", "kind": "MgrPolicy", "metadata": map[string]any{"name": "bad"}, "spec": spec}}
			err := k8s.Create(t.Context(), u, client.FieldValidation("Strict"))
			if err == nil {
				t.Fatalf("MgrPolicy with %s was stored", tc.spec)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("refusal does not name %s: %v", tc.field, err)
			}
		})
	}
}

// TestPolicyFollowedLive walks a MgrPolicy through what a site does to it,
// as one sequence: created, made stricter, broken, deleted.
func TestPolicyFollowedLive(t *testing.T) {
	ctx := t.Context()
	// Before any MgrPolicy, the built-in policy (Squid 19.2 on) is in force.
	if err := admits(t, "quay.io/ceph/ceph:v19.2.7"); err != nil {
		t.Fatalf("built-in policy refused Squid: %v", err)
	}
	// The shipped example, as the README has a site apply it.
	data, err := os.ReadFile(filepath.Join(root, "manifests", "examples", "mgrpolicy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mp := &v1alpha1.MgrPolicy{}
	if err := yaml.UnmarshalStrict(data, mp); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, mp); err != nil {
		t.Fatal(err)
	}
	gen := mp.Generation

	t.Run("created: every replica reports the generation it enforces", func(t *testing.T) {
		// Each replica writes its entry, then the controller its condition:
		// two writes, so both are waited for.
		await.ForErr(t, 15*time.Second, "both replicas in status.byPod and the Accepted condition at generation 1", func() (bool, error) {
			mp := get(t)
			w, c := replica(mp, webhookPod), replica(mp, controllerPod)
			cond := meta.FindStatusCondition(mp.Status.Conditions, v1alpha1.ConditionAccepted)
			return w != nil && c != nil && w.EnforcedGeneration == gen && c.EnforcedGeneration == gen &&
				cond != nil && cond.ObservedGeneration == gen, nil
		})
		mp := get(t)
		cond := meta.FindStatusCondition(mp.Status.Conditions, v1alpha1.ConditionAccepted)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != gen {
			t.Fatalf("Accepted condition = %+v, want True at generation %d", cond, gen)
		}
		want := webhookStore.InForce().Hash
		if want != mutate.DefaultPolicy().Hash() {
			t.Errorf("the example says other than the built-in policy: hash %s, built-in %s", want, mutate.DefaultPolicy().Hash())
		}
		if mp.Status.PolicyHash != want || replica(mp, webhookPod).PolicyHash != want || controllerStore.InForce().Hash != want {
			t.Fatalf("policy hashes differ: status %s, webhook %s, controller %s", mp.Status.PolicyHash, want, controllerStore.InForce().Hash)
		}
		if got := replica(mp, webhookPod).Operations; len(got) != 1 || got[0] != v1alpha1.OperationWebhook {
			t.Fatalf("webhook replica's operations = %v", got)
		}
	})

	t.Run("made stricter: enforced within 2s, no restart", func(t *testing.T) {
		start := time.Now()
		gen = update(t, func(s *mutate.PolicySpec) { s.Images.MinimumCephVersion = "20.0.0" })
		var err error
		await.ForErr(t, 15*time.Second, "Squid refused", func() (bool, error) {
			err = admits(t, "quay.io/ceph/ceph:v19.2.7")
			return err != nil, nil
		})
		took := time.Since(start)
		t.Logf("minimumCephVersion 20.0.0 enforced %v after the update", took)
		if took > 2*time.Second {
			t.Errorf("the change took %v to be enforced, want ≤ 2s", took)
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.template.spec.containers[0].image") {
			t.Fatalf("refusal does not name the image: %v", err)
		}
		tentacle := mgrWithImage(t, "quay.io/ceph/ceph:v20.2.4")
		if err := k8s.Create(t.Context(), tentacle, client.DryRunAll); err != nil {
			t.Fatalf("Tentacle refused: %v", err)
		}
		// The completed mgr names the policy that completed it.
		await.ForErr(t, 15*time.Second, "status.policyHash at the new generation", func() (bool, error) { return get(t).Status.ObservedGeneration == gen, nil })
		if stamp, ok := mutate.StampOf(tentacle); !ok || stamp.Policy != get(t).Status.PolicyHash {
			t.Fatalf("completed mgr stamped %+v, the MgrPolicy in force hashes %s", stamp, get(t).Status.PolicyHash)
		}
		if controllerStore.Current().Images.MinimumCephVersion != "20.0.0" {
			t.Fatalf("the controller enforces %q", controllerStore.Current().Images.MinimumCephVersion)
		}
	})

	t.Run("broken: the last good policy stays and it is said", func(t *testing.T) {
		good := gen
		// The schema admits it; the image reference grammar (upper case in a
		// repository) is the policy's validation's alone.
		bad := update(t, func(s *mutate.PolicySpec) {
			s.Images.MinimumCephVersion = "21.0.0"
			s.DefaultImage = "quay.io/CEPH/ceph:v21.2.0"
		})
		await.ForErr(t, 15*time.Second, "Accepted=False", func() (bool, error) {
			c := meta.FindStatusCondition(get(t).Status.Conditions, v1alpha1.ConditionAccepted)
			return c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == bad, nil
		})
		mp := get(t)
		c := meta.FindStatusCondition(mp.Status.Conditions, v1alpha1.ConditionAccepted)
		if c.Reason != v1alpha1.ReasonInvalid || !strings.Contains(c.Message, "spec.defaultImage") {
			t.Fatalf("condition does not name the field: %+v", c)
		}
		await.ForErr(t, 15*time.Second, "the webhook replica reports the refusal", func() (bool, error) {
			w := replica(get(t), webhookPod)
			return w.ObservedGeneration == bad && w.EnforcedGeneration == good && len(w.Errors) == 1 && strings.Contains(w.Errors[0], "spec.defaultImage"), nil
		})
		if err := admits(t, "quay.io/ceph/ceph:v20.2.4"); err != nil {
			t.Fatalf("the refused policy (21.0.0 minimum) is enforced: %v", err)
		}
		if err := admits(t, "quay.io/ceph/ceph:v19.2.7"); err == nil {
			t.Fatal("the last good policy (20.0.0 minimum) is not enforced")
		}
		for _, op := range []string{v1alpha1.OperationWebhook, v1alpha1.OperationController} {
			if ok, err := stateIs(op, "invalid"); !ok || err != nil {
				t.Fatalf("mgr_policy_state{operation=%q,state=invalid} not 1 (%v)", op, err)
			}
		}
		await.ForErr(t, 15*time.Second, "a PolicyRejected Event", func() (bool, error) { return policyEvent(ctx, policy.ReasonRejected, "spec.defaultImage") })
	})

	t.Run("deleted: the last good policy stays", func(t *testing.T) {
		if err := k8s.Delete(ctx, get(t)); err != nil {
			t.Fatal(err)
		}
		await.ForErr(t, 15*time.Second, "mgr_policy_state missing", func() (bool, error) { return stateIs(v1alpha1.OperationWebhook, "missing") })
		if err := admits(t, "quay.io/ceph/ceph:v19.2.7"); err == nil {
			t.Fatal("deleting the MgrPolicy dropped its rules: Squid admitted")
		}
		if got := webhookStore.InForce(); got.Source != "MgrPolicy default" || got.Policy.Images.MinimumCephVersion != "20.0.0" {
			t.Fatalf("in force after deletion: %s, minimum %s", got.Source, got.Policy.Images.MinimumCephVersion)
		}
		await.ForErr(t, 15*time.Second, "a PolicyDeleted Event", func() (bool, error) { return policyEvent(ctx, policy.ReasonDeleted, "stays in force") })
	})
}

// TestExplain: kubectl explain documents the policy's fields from the CRD.
func TestExplain(t *testing.T) {
	out, err := exec.Command(api.Kubectl, "--kubeconfig", api.Kubeconfig, "explain", "mgrpolicy.spec.images.minimumCephVersion").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl explain: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "oldest Ceph release admitted") {
		t.Fatalf("kubectl explain does not document the field:\n%s", out)
	}
}

// TestEnforcementActions: a rule's action decides what its violation does
// to a write: Warn admits it with a warning naming the rule, Audit admits it
// silently (counted, and in the request's audit annotations), Deny refuses it.
func TestEnforcementActions(t *testing.T) {
	ctx := t.Context()
	c, seen := api.WarnedClient(t, k8s.Scheme())
	spec := mutate.PolicySpec{Images: mutate.ImagePolicy{MinimumCephVersion: "20.0.0"}}
	mp := &v1alpha1.MgrPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(mp), mp); apierrors.IsNotFound(err) {
		if err := k8s.Create(ctx, mp); err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	squid := "quay.io/ceph/ceph:v19.2.7"
	for _, action := range []mutate.Action{mutate.ActionWarn, mutate.ActionAudit, mutate.ActionDeny} {
		t.Run(string(action), func(t *testing.T) {
			spec.Enforcement = map[mutate.Rule]mutate.Action{mutate.RuleMinimumCephVersion: action}
			want, errs := mutate.PolicyFromSpec(&spec, nil)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			update(t, func(s *mutate.PolicySpec) { *s = *spec.DeepCopy() })
			await.ForErr(t, 15*time.Second, "the webhook enforces "+string(action), func() (bool, error) { return webhookStore.InForce().Hash == want.Hash(), nil })
			before, err := testenv.CounterSum("mgr_webhook_policy_violations_total", map[string]string{"rule": string(mutate.RuleMinimumCephVersion), "action": string(action)})
			if err != nil {
				t.Fatal(err)
			}
			seen.Take()
			err = c.Create(ctx, mgrWithImage(t, squid), client.DryRunAll)
			got := seen.Take()
			switch action {
			case mutate.ActionDeny:
				if err == nil || !strings.Contains(err.Error(), "spec.template.spec.containers[0].image") {
					t.Fatalf("Deny: %v", err)
				}
			case mutate.ActionWarn:
				if err != nil {
					t.Fatalf("Warn refused the write: %v", err)
				}
				if len(got) != 1 || !strings.Contains(got[0], "older than the policy's minimum 20.0.0") || !strings.Contains(got[0], "(policy rule images.minimumCephVersion: Warn)") {
					t.Fatalf("warnings %q, want the violation and its rule", got)
				}
			case mutate.ActionAudit:
				if err != nil || len(got) != 0 {
					t.Fatalf("Audit: error %v, warnings %q; want neither", err, got)
				}
				key := "mutate.mgr.ceph.rook.io/" + webhook.AuditAnnotationViolations
				await.ForErr(t, 15*time.Second, "the audit log records the violation", func() (bool, error) {
					data, err := os.ReadFile(auditLog)
					if err != nil {
						return false, err
					}
					for _, line := range strings.Split(string(data), "\n") {
						var ev struct {
							Annotations map[string]string `json:"annotations"`
						}
						if json.Unmarshal([]byte(line), &ev) == nil && strings.Contains(ev.Annotations[key], "(policy rule images.minimumCephVersion: Audit)") {
							return true, nil
						}
					}
					return false, nil
				})
			}
			after, err := testenv.CounterSum("mgr_webhook_policy_violations_total", map[string]string{"rule": string(mutate.RuleMinimumCephVersion), "action": string(action)})
			if err != nil || after != before+1 {
				t.Fatalf("mgr_webhook_policy_violations_total{action=%s} went %v -> %v (%v)", action, before, after, err)
			}
			// A rule that keeps the cluster whole denies whatever the policy says.
			two := mgrWithImage(t, "quay.io/ceph/ceph:v20.2.4")
			two.Spec.Replicas = ptr.To[int32](2)
			if err := c.Create(ctx, two, client.DryRunAll); err == nil {
				t.Fatal("two replicas admitted")
			}
		})
	}
}

// TestComponentsCannotChangeThePolicy: impersonating each component with the
// shipped RBAC, the policy's spec cannot be loosened, the MgrPolicy neither
// deleted nor another created; writing the status (its job) works.
func TestComponentsCannotChangeThePolicy(t *testing.T) {
	ctx := t.Context()
	mp := &v1alpha1.MgrPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if err := k8s.Create(ctx, mp); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, sa := range []string{"mgr-webhook", "mgr-bootstrap"} {
		t.Run(sa, func(t *testing.T) {
			c, err := client.New(api.ConfigAs(testenv.ServiceAccountUser("mgr-webhook-system", sa)), client.Options{Scheme: k8s.Scheme()})
			if err != nil {
				t.Fatal(err)
			}
			loosen := get(t)
			loosen.Spec.AllowPrivileged = true
			loosen.Spec.Exemptions = []mutate.Exemption{{Namespace: ns}}
			for name, err := range map[string]error{
				"update the spec": c.Update(ctx, loosen),
				"delete it":       c.Delete(ctx, get(t)),
				"create another":  c.Create(ctx, &v1alpha1.MgrPolicy{ObjectMeta: metav1.ObjectMeta{Name: "loose"}, Spec: loosen.Spec}),
			} {
				if !apierrors.IsForbidden(err) {
					t.Errorf("%s may %s: %v", sa, name, err)
				}
			}
			own := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "mgr.ceph.rook.io/v1alpha1", "kind": "MgrPolicy",
				"metadata": map[string]any{"name": "default"}, "status": map[string]any{"byPod": []any{map[string]any{"id": sa + "-test"}}}}}
			if err := c.Status().Patch(ctx, own, client.Apply, client.FieldOwner("test/"+sa), client.ForceOwnership); err != nil {
				t.Errorf("%s may not write its status entry: %v", sa, err)
			}
			if got := get(t); got.Spec.AllowPrivileged || len(got.Spec.Exemptions) > 0 {
				t.Fatalf("the spec changed: %+v", got.Spec)
			}
		})
	}
}

// mgrOf is the shipped minimal mgr id running image.
func mgrOf(t *testing.T, id, image string) *appsv1.Deployment {
	t.Helper()
	data, err := testenv.MinimalMgr(root, ns, id, [2]int32{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(data, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = image
	return d
}

// reported reads the namespace's Report: for each mgr, its results as
// "rule=result", sorted; and the summary.
func reported(t *testing.T) (map[string][]string, map[string]int64) {
	t.Helper()
	rep := &unstructured.Unstructured{}
	rep.SetAPIVersion("openreports.io/v1alpha1")
	rep.SetKind("Report")
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "mgr-policy"}, rep); err != nil {
		return nil, nil
	}
	byMgr := map[string][]string{}
	results, _, _ := unstructured.NestedSlice(rep.Object, "results")
	for _, r := range results {
		r := r.(map[string]any)
		subjects := r["resources"].([]any)
		name := subjects[0].(map[string]any)["name"].(string)
		byMgr[name] = append(byMgr[name], fmt.Sprintf("%s=%s", r["rule"], r["result"]))
	}
	for k := range byMgr {
		slices.Sort(byMgr[k])
	}
	summary := map[string]int64{}
	s, _, _ := unstructured.NestedMap(rep.Object, "summary")
	for k, v := range s {
		summary[k] = v.(int64)
	}
	return byMgr, summary
}

// TestRolloutOfAStricterRule raises minimumCephVersion the way a site rolls
// a stricter rule out: Warn, then Audit, then Deny. At each step the
// namespace's Report lists exactly the old mgrs, a new create gets the
// warning or the denial, and the old mgrs stay writable (labels, status,
// spec changes that keep their image, deletion).
func TestRolloutOfAStricterRule(t *testing.T) {
	ctx := t.Context()
	c, seen := api.WarnedClient(t, k8s.Scheme())
	mp := &v1alpha1.MgrPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(mp), mp); apierrors.IsNotFound(err) {
		if err := k8s.Create(ctx, mp); err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	apply := func(spec mutate.PolicySpec) {
		t.Helper()
		want, errs := mutate.PolicyFromSpec(&spec, nil)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		gen := update(t, func(s *mutate.PolicySpec) { *s = *spec.DeepCopy() })
		await.ForErr(t, 15*time.Second, "both components follow the new spec, and the controller accepted it", func() (bool, error) {
			st := get(t).Status
			c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionAccepted)
			return webhookStore.InForce().Hash == want.Hash() && controllerStore.InForce().Hash == want.Hash() &&
				st.PolicyHash == want.Hash() && c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen, nil
		})
	}
	// Before: Squid is admitted. Two old mgrs on Squid, one on Tentacle.
	apply(mutate.PolicySpec{})
	for id, image := range map[string]string{"old1": "quay.io/ceph/ceph:v19.2.7", "old2": "quay.io/ceph/ceph:v19.2.6", "new": "quay.io/ceph/ceph:v20.2.4"} {
		// The API server's admission policy reads status.enforced from its
		// informer: a moment after the status write.
		var err error
		await.ForErr(t, 15*time.Second, "mgr "+id+" on "+image+" created", func() (bool, error) {
			err = k8s.Create(ctx, mgrOf(t, id, image))
			return err == nil, err
		})
	}
	await.ForErr(t, 15*time.Second, "a Report of three compliant mgrs", func() (bool, error) {
		by, _ := reported(t)
		return len(by) == 3 && slices.Equal(by["rook-ceph-mgr-old1"], []string{"policy=pass"}) && slices.Equal(by["rook-ceph-mgr-new"], []string{"policy=pass"}), fmt.Errorf("reported %v", by)
	})

	squidRule := map[string]string{"Warn": "images.minimumCephVersion=warn", "Audit": "images.minimumCephVersion=fail", "Deny": "images.minimumCephVersion=fail"}
	for _, action := range []mutate.Action{mutate.ActionWarn, mutate.ActionAudit, mutate.ActionDeny} {
		t.Run(string(action), func(t *testing.T) {
			apply(mutate.PolicySpec{Images: mutate.ImagePolicy{MinimumCephVersion: "20.0.0"},
				Enforcement: map[mutate.Rule]mutate.Action{mutate.RuleMinimumCephVersion: action}})
			want := map[string][]string{
				"rook-ceph-mgr-old1": {squidRule[string(action)]},
				"rook-ceph-mgr-old2": {squidRule[string(action)]},
				"rook-ceph-mgr-new":  {"policy=pass"},
			}
			var got map[string][]string
			await.ForErr(t, 15*time.Second, "the Report lists exactly the old mgrs", func() (bool, error) {
				got, _ = reported(t)
				return maps.EqualFunc(got, want, slices.Equal), fmt.Errorf("reported %v", got)
			})
			_, summary := reported(t)
			if summary["pass"] != 1 || summary["fail"]+summary["warn"] != 2 {
				t.Errorf("summary %v, want 1 pass and 2 violations", summary)
			}
			result := map[mutate.Action]string{mutate.ActionWarn: "warn", mutate.ActionAudit: "fail", mutate.ActionDeny: "fail"}[action]
			// The gauges are set after the pass has written every Report.
			await.ForErr(t, 15*time.Second, "mgr_policy_audit_mgrs{result="+result+"} = 2", func() (bool, error) {
				n, err := testenv.CounterSum("mgr_policy_audit_mgrs", map[string]string{"result": result})
				return n == 2, err
			})
			await.ForErr(t, 15*time.Second, "a PolicyAudit Event on an old mgr", func() (bool, error) {
				events, err := testenv.DeploymentEvents(ctx, k8s, ns, "rook-ceph-mgr-old1")
				return strings.Contains(events[audit.ReasonPolicyAudit], result+" against the policy in force: images.minimumCephVersion"), err
			})

			// A new Squid mgr: warned, admitted silently, or denied.
			seen.Take()
			err := c.Create(ctx, mgrOf(t, "another", "quay.io/ceph/ceph:v19.2.7"), client.DryRunAll)
			warned := seen.Take()
			switch action {
			case mutate.ActionWarn:
				if err != nil || len(warned) != 1 || !strings.Contains(warned[0], "images.minimumCephVersion: Warn") {
					t.Errorf("Warn: error %v, warnings %q", err, warned)
				}
			case mutate.ActionAudit:
				if err != nil || len(warned) != 0 {
					t.Errorf("Audit: error %v, warnings %q", err, warned)
				}
			case mutate.ActionDeny:
				if err == nil || !strings.Contains(err.Error(), "older than the policy's minimum 20.0.0") {
					t.Errorf("Deny: %v", err)
				}
			}

			// The old mgrs stay writable: a label, a status annotation, a spec
			// change that keeps the image (the ratchet judges what it changes).
			old := &appsv1.Deployment{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rook-ceph-mgr-old1"}, old); err != nil {
				t.Fatal(err)
			}
			old.Labels["team"] = "storage-" + strings.ToLower(string(action))
			metav1.SetMetaDataAnnotation(&old.ObjectMeta, "mgr.ceph.rook.io/bootstrap-status", `{"phase":"WaitingForPod"}`)
			old.Spec.Template.Spec.Containers[0].Env = append(old.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "STEP_" + strings.ToUpper(string(action)), Value: "1"})
			if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := c.Update(ctx, old); apierrors.IsConflict(err) {
					fresh := &appsv1.Deployment{}
					if err := k8s.Get(ctx, client.ObjectKeyFromObject(old), fresh); err != nil {
						return err
					}
					fresh.Labels, fresh.Annotations, fresh.Spec = old.Labels, old.Annotations, old.Spec
					old = fresh
					return err
				} else {
					return err
				}
			}); err != nil {
				t.Errorf("an old mgr is not writable under %s: %v", action, err)
			}
		})
	}
	// Cleanup is never blocked: an old mgr is deleted, and leaves the Report.
	if err := k8s.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rook-ceph-mgr-old2"}}); err != nil {
		t.Fatalf("deleting an old mgr under Deny: %v", err)
	}
	await.ForErr(t, 15*time.Second, "the deleted mgr leaves the Report", func() (bool, error) {
		got, _ := reported(t)
		_, listed := got["rook-ceph-mgr-old2"]
		return got != nil && !listed, nil
	})
}

// TestStoppedReplicaWithdrawsItsEntry: a replica that stops (a rollout's
// old Pod) removes its status.byPod entry, and only its own: the other
// replicas' entries and the controller's condition stay.
func TestStoppedReplicaWithdrawsItsEntry(t *testing.T) {
	ctx := t.Context()
	mp := &v1alpha1.MgrPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if err := k8s.Create(ctx, mp); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	const leaving = "mgr-webhook-7d9f-leaving"
	mgr, err := ctrl.NewManager(api.ConfigAs(testenv.WebhookServiceAccount), ctrl.Options{
		Scheme: k8s.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		// A second webhook replica in this process: its controller's name repeats.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := &policy.Watcher{Client: mgr.GetClient(), Name: "default", Store: policy.NewStore(mutate.DefaultPolicy(), "built-in"),
		Operation: v1alpha1.OperationWebhook, Pod: leaving}
	if err := w.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(mctx); err != nil {
			t.Error(err)
		}
	}()
	await.ForErr(t, 15*time.Second, "every replica's entry and the controller's condition", func() (bool, error) {
		got := get(t)
		return replica(got, leaving) != nil && replica(got, webhookPod) != nil && replica(got, controllerPod) != nil &&
			meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccepted) != nil, nil
	})
	stop()
	<-done
	await.ForErr(t, 15*time.Second, "its entry withdrawn", func() (bool, error) { return replica(get(t), leaving) == nil, nil })
	got := get(t)
	if replica(got, webhookPod) == nil || replica(got, controllerPod) == nil {
		t.Fatalf("the other replicas' entries went too: %+v", got.Status.ByPod)
	}
	if meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccepted) == nil || got.Status.PolicyHash == "" {
		t.Fatalf("the controller's condition or hash went: %+v", got.Status)
	}
}

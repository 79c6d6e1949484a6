// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package helm

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/bootstrap/uninstall"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/testenv"
	"github.com/rook-mgr/mgr-webhook/internal/mgrctl"
	"github.com/rook-mgr/mgr-webhook/test/internal/await"
	"github.com/rook-mgr/mgr-webhook/test/internal/helmchart"
)

// TestUninstallReleasesMgrs: after the step before an uninstall (the
// chart's pre-delete hook, as the controller's ServiceAccount with the
// hook's Role; or mgrctl release, as an admin before kubectl delete) and the
// uninstall itself, deleting a mgr and then its namespace completes; a mgr
// whose deletion already hung on the finalizer goes too. The controller is
// scaled to zero first (a running one would put its finalizer back), and
// nothing else of the mgrs changes.
func TestUninstallReleasesMgrs(t *testing.T) {
	const installNS = "mgr-webhook-system"
	// The README's uninstall commands are the two paths run below.
	block, err := testenv.READMEBlock("uninstall")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"helm uninstall mgr-webhook --namespace mgr-webhook-system", "mgrctl release"} {
		if !strings.Contains(block, line+"\n") {
			t.Errorf("the README's uninstall block lacks %q:\n%s", line, block)
		}
	}
	api, err := testenv.StartForInstalls(installNS)
	if err != nil {
		t.Fatal(err)
	}
	defer api.Stop()
	ctx := t.Context()
	w, err := testenv.StartWorkloads(ctx, api)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Each path below installs the chart serving a Ceph namespace of its own.
	render := func(ns string) (manifest, hooks string) {
		vals := values(t, "{cephNamespaces: ["+ns+"]}")
		hooks, err := helmchart.RenderChartHooks(installNS, vals)
		if err != nil {
			t.Fatal(err)
		}
		return template(t, installNS, vals), hooks
	}
	_, hooks := render(testenv.DefaultCephNamespace)
	// The hook's Job as the API server takes it (no kubelet runs it here:
	// its step runs below in this process, as its ServiceAccount).
	var job string
	for _, doc := range strings.Split(hooks, "\n---\n") {
		if strings.Contains(doc, "kind: Job") {
			job = doc
		}
	}
	if !strings.Contains(job, "--release-mgrs") || !strings.Contains(job, "serviceAccountName: mgr-bootstrap") || !strings.Contains(hooks, `"helm.sh/hook": pre-delete`) && !strings.Contains(hooks, "helm.sh/hook: pre-delete") {
		t.Fatalf("the chart's pre-delete hook does not run mgr-bootstrap --release-mgrs as mgr-bootstrap:\n%s", hooks)
	}

	for _, path := range []string{"helm hook", "mgrctl release"} {
		t.Run(path, func(t *testing.T) {
			ns := "ceph-" + strings.ReplaceAll(path, " ", "-")
			if err := api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Fatal(err)
			}
			manifest, hooks := render(ns)
			// The mgrs as the controller leaves them: its finalizer on each
			// (created before the webhooks are installed, which nothing serves here).
			var mgrs []*appsv1.Deployment
			for _, id := range []string{"a", "b"} {
				d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: contract.DeploymentName(id), Namespace: ns,
					Labels: map[string]string{contract.LabelApp: contract.AppName, contract.LabelMgrID: id}, Finalizers: []string{contract.FinalizerCephxKey, "example.com/other"}}}
				d.Spec.Replicas = new(int32)
				d.Spec.Selector = &metav1.LabelSelector{MatchLabels: d.Labels}
				d.Spec.Template.Labels = d.Labels
				d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "mgr", Image: "quay.io/ceph/ceph:v20.2.4"}}
				if err := api.Client.Create(ctx, d); err != nil {
					t.Fatal(err)
				}
				mgrs = append(mgrs, d)
			}
			api.MustKubectl(t, manifest, "apply", "--server-side", "--force-conflicts", "-f", "-")
			api.MustKubectl(t, hooks, "apply", "--dry-run=server", "-f", "-")
			await.For(t, 90*time.Second, "the controller's pods", func() bool { return len(controllerPods(t, api.Client, installNS)) > 0 })
			// A deletion the finalizer holds.
			if err := api.Client.Delete(ctx, mgrs[1]); err != nil {
				t.Fatal(err)
			}
			// The API server marks it deleted and keeps it: the finalizer holds it.
			await.For(t, 90*time.Second, "mgr b marked deleted", func() bool {
				held := &appsv1.Deployment{}
				return api.Client.Get(ctx, client.ObjectKeyFromObject(mgrs[1]), held) == nil && held.DeletionTimestamp != nil
			})

			switch path {
			case "helm hook":
				var roles []string
				for _, doc := range strings.Split(hooks, "\n---\n") {
					if strings.Contains(doc, "kind: Role") {
						roles = append(roles, doc)
					}
				}
				api.MustKubectl(t, strings.Join(roles, "\n---\n"), "apply", "-f", "-")
				scheme := runtime.NewScheme()
				if err := clientgoscheme.AddToScheme(scheme); err != nil {
					t.Fatal(err)
				}
				as, err := client.New(api.ConfigAs(testenv.ServiceAccountUser(installNS, "mgr-bootstrap")), client.Options{Scheme: scheme})
				if err != nil {
					t.Fatal(err)
				}
				rep, err := uninstall.Job{Client: as, Namespace: installNS, Deployment: "mgr-bootstrap", Wait: time.Minute, Namespaces: []string{ns}}.Run(ctx)
				if err != nil {
					t.Fatalf("the release as mgr-bootstrap: %v", err)
				}
				if want := []string{ns + "/" + mgrs[0].Name, ns + "/" + mgrs[1].Name}; !slices.Equal(rep.LetGo, want) || rep.PodsLeft != 0 {
					t.Errorf("released %v with %d controller pods left, want %v and none", rep.LetGo, rep.PodsLeft, want)
				}
			case "mgrctl release":
				// --dry-run names what it would change and changes nothing.
				var dry, dryErr bytes.Buffer
				if code := mgrctl.Run(ctx, []string{"release", "--dry-run", "--kubeconfig", api.Kubeconfig}, nil, &dry, &dryErr); code != mgrctl.ExitOK {
					t.Fatalf("mgrctl release --dry-run: exit %d: %s%s", code, dry.String(), dryErr.String())
				}
				for _, want := range []string{"would scale deployment " + installNS + "/mgr-bootstrap to 0", "would release deployment " + ns + "/" + mgrs[0].Name, "would release deployment " + ns + "/" + mgrs[1].Name, "2 mgr Deployments would be released; nothing was changed"} {
					if !strings.Contains(dry.String(), want) {
						t.Errorf("mgrctl release --dry-run lacks %q:\n%s", want, dry.String())
					}
				}
				for _, d := range mgrs {
					live := &appsv1.Deployment{}
					if err := api.Client.Get(ctx, client.ObjectKeyFromObject(d), live); err != nil {
						t.Fatal(err)
					}
					if !slices.Contains(live.Finalizers, contract.FinalizerCephxKey) {
						t.Errorf("mgrctl release --dry-run removed the finalizer of %s: %v", d.Name, live.Finalizers)
					}
				}
				ctrl := &appsv1.Deployment{}
				if err := api.Client.Get(ctx, client.ObjectKey{Namespace: installNS, Name: "mgr-bootstrap"}, ctrl); err != nil {
					t.Fatal(err)
				}
				if ctrl.Spec.Replicas == nil || *ctrl.Spec.Replicas == 0 {
					t.Errorf("mgrctl release --dry-run scaled the controller to 0")
				}
				var out, errb bytes.Buffer
				if code := mgrctl.Run(ctx, []string{"release", "--kubeconfig", api.Kubeconfig}, nil, &out, &errb); code != 0 {
					t.Fatalf("mgrctl release: exit %d: %s%s", code, out.String(), errb.String())
				}
				if !strings.Contains(out.String(), "2 mgr Deployments released") {
					t.Errorf("mgrctl release said:\n%s", out.String())
				}
			}
			if n := len(controllerPods(t, api.Client, installNS)); n != 0 {
				t.Errorf("%d controller pods left after the release", n)
			}
			live := &appsv1.Deployment{}
			if err := api.Client.Get(ctx, client.ObjectKeyFromObject(mgrs[0]), live); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(live.Finalizers, []string{"example.com/other"}) || live.Spec.Template.Spec.Containers[0].Image != mgrs[0].Spec.Template.Spec.Containers[0].Image {
				t.Errorf("mgr a after the release: finalizers %v, image %s; want only the other finalizer, the spec as it was", live.Finalizers, live.Spec.Template.Spec.Containers[0].Image)
			}

			// The uninstall: every object of the release.
			file := filepath.Join(t.TempDir(), "release.yaml")
			if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
				t.Fatal(err)
			}
			api.MustKubectl(t, "", "delete", "--ignore-not-found", "--wait=false", "-f", file)
			api.MustKubectl(t, "", "delete", "--ignore-not-found", "-n", installNS, "role,rolebinding", "mgr-bootstrap-release")
			// The other finalizer is someone else's, who is done now: it
			// alone goes (the patch fails should the controller's be left).
			done := []byte(`[{"op":"test","path":"/metadata/finalizers","value":["example.com/other"]},{"op":"remove","path":"/metadata/finalizers/0"}]`)
			for _, d := range mgrs {
				if err := api.Client.Patch(ctx, d, client.RawPatch(types.JSONPatchType, done)); err != nil {
					t.Fatalf("removing the other finalizer of %s: %v", d.Name, err)
				}
			}
			if err := api.Client.Delete(ctx, mgrs[0]); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
			for _, d := range mgrs {
				await.For(t, 90*time.Second, "mgr "+d.Name+" deleted", func() bool {
					return apierrors.IsNotFound(api.Client.Get(ctx, client.ObjectKeyFromObject(d), &appsv1.Deployment{}))
				})
			}
			if err := api.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Fatal(err)
			}
			await.For(t, 90*time.Second, "namespace "+ns+" deleted", func() bool {
				return apierrors.IsNotFound(api.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}))
			})
		})
	}
}

func controllerPods(t *testing.T, cl client.Client, ns string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := cl.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/name": "mgr-bootstrap"}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/internal/harness/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from the current output")

// testClusters are the ClusterInfo of the namespaces the fixtures use; rook-ceph
// carries the seed's fsid.
var testClusters = map[string]ClusterInfo{
	"rook-ceph": {Namespace: "rook-ceph", FSID: "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b"},
	"ceph-east": {Namespace: "ceph-east", FSID: "47913c99-d1ed-4a9b-bd55-2b49490b1229"},
}

// fixture is one input of the golden corpus.
type fixture struct {
	name   string // golden file stem
	input  string
	golden string
	policy *Policy
}

// fixtures returns every input of the golden corpus (internal/harness/golden):
// testdata/*.yaml and the shipped mgr examples, each under its own policy
// file if it has one, else the default policy.
func fixtures(t testing.TB) []fixture {
	t.Helper()
	cases, err := golden.Cases("..")
	if err != nil {
		t.Fatal(err)
	}
	var fs []fixture
	for _, c := range cases {
		f := fixture{name: c.Name, input: c.Input, golden: c.Golden, policy: DefaultPolicy()}
		if c.Policy != "" {
			data, err := os.ReadFile(c.Policy)
			if err != nil {
				t.Fatal(err)
			}
			if f.policy, err = ParsePolicy(data); err != nil {
				t.Fatalf("%s: %v", c.Policy, err)
			}
		}
		fs = append(fs, f)
	}
	return fs
}

func loadDeployment(t testing.TB, path string) *appsv1.Deployment {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(data, d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return d
}

func clusterOf(t testing.TB, d *appsv1.Deployment) ClusterInfo {
	t.Helper()
	info, ok := testClusters[d.Namespace]
	if !ok {
		t.Fatalf("fixture namespace %q has no test ClusterInfo", d.Namespace)
	}
	return info
}

func completeFixture(t testing.TB, f fixture) (*appsv1.Deployment, Result) {
	t.Helper()
	in := loadDeployment(t, f.input)
	res, errs := Complete(in, clusterOf(t, in), f.policy)
	if len(errs) > 0 {
		t.Fatalf("Complete(%s): %v", f.input, errs.ToAggregate())
	}
	return in, res
}

// render is the golden form: the warnings as comments, then the Deployment.
func render(t testing.TB, res Result) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, w := range res.Warnings {
		b.WriteString("# warning: " + w + "\n")
	}
	out, err := yaml.Marshal(res.Deployment)
	if err != nil {
		t.Fatal(err)
	}
	b.Write(out)
	return b.Bytes()
}

func TestGolden(t *testing.T) {
	used := map[string]bool{}
	for _, f := range fixtures(t) {
		golden := f.golden
		used[filepath.Base(golden)] = true
		t.Run(f.name, func(t *testing.T) {
			_, res := completeFixture(t, f)
			got := render(t, res)
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./mutate -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from Complete's output (go test ./mutate -update rewrites it); got:\n%s", golden, got)
			}
		})
	}
	goldens, _ := filepath.Glob("testdata/*.golden.yaml")
	for _, g := range goldens {
		if !used[filepath.Base(g)] {
			t.Errorf("%s has no input: delete it or add its input", g)
		}
	}
}

func TestCompleteIsIdempotent(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			_, once := completeFixture(t, f)
			twice, errs := Complete(once.Deployment, clusterOf(t, once.Deployment), f.policy)
			if len(errs) > 0 {
				t.Fatal(errs.ToAggregate())
			}
			if !equality.Semantic.DeepEqual(once.Deployment, twice.Deployment) {
				t.Errorf("Complete(Complete(x)) != Complete(x):\nonce:\n%s\ntwice:\n%s", render(t, once), render(t, twice))
			}
			if twice.Changed != 0 || len(twice.Warnings) != 0 {
				t.Errorf("second Complete reported changes %b and warnings %q; want none", twice.Changed, twice.Warnings)
			}
		})
	}
}

func TestCompletedFixturesValidate(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			_, res := completeFixture(t, f)
			if errs := Validate(res.Deployment, clusterOf(t, res.Deployment), f.policy); len(errs) > 0 {
				t.Errorf("Validate(Complete(x)) = %v; want no errors", errs.ToAggregate())
			}
		})
	}
}

func TestCompleteDoesNotModifyInput(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			in, _ := completeFixture(t, f)
			if fresh := loadDeployment(t, f.input); !reflect.DeepEqual(in, fresh) {
				t.Error("Complete modified its input")
			}
		})
	}
}

// TestChangedSections checks that Changed names exactly the sections that
// differ: the webhook builds its patch from it.
func TestChangedSections(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			in, res := completeFixture(t, f)
			for s, get := range sectionGetters {
				differs := !equality.Semantic.DeepEqual(get(in), get(res.Deployment))
				if differs != (res.Changed&s != 0) {
					t.Errorf("section %b: differs=%v but Changed has it=%v", s, differs, res.Changed&s != 0)
				}
			}
		})
	}
}

var sectionGetters = map[Section]func(*appsv1.Deployment) any{
	SectionLabels:           func(d *appsv1.Deployment) any { return d.Labels },
	SectionAnnotations:      func(d *appsv1.Deployment) any { return d.Annotations },
	SectionReplicas:         func(d *appsv1.Deployment) any { return d.Spec.Replicas },
	SectionSelector:         func(d *appsv1.Deployment) any { return d.Spec.Selector },
	SectionStrategy:         func(d *appsv1.Deployment) any { return d.Spec.Strategy },
	SectionTemplateMetadata: func(d *appsv1.Deployment) any { return d.Spec.Template.ObjectMeta },
	SectionContainers:       func(d *appsv1.Deployment) any { return d.Spec.Template.Spec.Containers },
	SectionInitContainers:   func(d *appsv1.Deployment) any { return d.Spec.Template.Spec.InitContainers },
	SectionVolumes:          func(d *appsv1.Deployment) any { return d.Spec.Template.Spec.Volumes },
	SectionServiceAccount:   func(d *appsv1.Deployment) any { return d.Spec.Template.Spec.ServiceAccountName },
}

// TestSectionsCoverAllChanges checks that Complete changes nothing outside its
// sections: with every section put back, the output equals the input.
func TestSectionsCoverAllChanges(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			in, res := completeFixture(t, f)
			out := res.Deployment.DeepCopy()
			out.Labels, out.Annotations = in.Labels, in.Annotations
			out.Spec.Replicas, out.Spec.Selector, out.Spec.Strategy = in.Spec.Replicas, in.Spec.Selector, in.Spec.Strategy
			out.Spec.Template.ObjectMeta = in.Spec.Template.ObjectMeta
			ps, inPS := &out.Spec.Template.Spec, &in.Spec.Template.Spec
			ps.Containers, ps.InitContainers, ps.Volumes, ps.ServiceAccountName = inPS.Containers, inPS.InitContainers, inPS.Volumes, inPS.ServiceAccountName
			ps.Affinity, ps.Tolerations, ps.PriorityClassName = inPS.Affinity, inPS.Tolerations, inPS.PriorityClassName
			if !equality.Semantic.DeepEqual(in, out) {
				t.Error("Complete changed a field outside its sections; add a Section for it")
			}
		})
	}
}

// TestInitImagesFollowTheMgrImage: the init containers run the mgr's image,
// also after the mgr image changes.
func TestInitImagesFollowTheMgrImage(t *testing.T) {
	d := completedMinimal(t)
	mgrContainer(d).Image = "quay.io/ceph/ceph:v17.2.7"
	res, errs := Complete(d, testClusters["rook-ceph"], DefaultPolicy())
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	ics := res.Deployment.Spec.Template.Spec.InitContainers
	if len(ics) == 0 {
		t.Fatal("no init containers")
	}
	for _, ic := range ics {
		if ic.Image != "quay.io/ceph/ceph:v17.2.7" {
			t.Errorf("init container %s runs %s after the mgr moved to v17.2.7", ic.Name, ic.Image)
		}
	}
	if res.Changed&SectionInitContainers == 0 {
		t.Error("the init containers' change is not reported")
	}
}

// TestPlacement: completion places and probes a mgr as Rook does (required
// anti-affinity between a cluster's mgrs on kubernetes.io/hostname, 5 s on
// a lost node, system-cluster-critical, NET_RAW dropped, a startup probe,
// a preStop hook that hands the active role over),
// the policy relaxes or changes each, and what the Deployment sets itself
// is kept.
func TestPlacement(t *testing.T) {
	minimal := func() *appsv1.Deployment { return loadDeployment(t, "../manifests/examples/minimal-mgr.yaml") }
	complete := func(t *testing.T, d *appsv1.Deployment, p *Policy) *corev1.PodSpec {
		t.Helper()
		res, errs := Complete(d, testClusters["rook-ceph"], p)
		if len(errs) > 0 {
			t.Fatal(errs.ToAggregate())
		}
		again, _ := Complete(res.Deployment, testClusters["rook-ceph"], p)
		if again.Changed != 0 {
			t.Errorf("completing again changes sections %b", again.Changed)
		}
		return &res.Deployment.Spec.Template.Spec
	}
	mgrTerm := corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rook-ceph-mgr", "rook_cluster": "rook-ceph"}},
		TopologyKey: "kubernetes.io/hostname"}
	tolerations := func(seconds int64) []corev1.Toleration {
		return []corev1.Toleration{
			{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(seconds)},
			{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(seconds)},
		}
	}

	t.Run("defaults", func(t *testing.T) {
		spec := complete(t, minimal(), DefaultPolicy())
		if a := spec.Affinity; a == nil || a.PodAntiAffinity == nil || !equality.Semantic.DeepEqual(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, []corev1.PodAffinityTerm{mgrTerm}) ||
			len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 0 {
			t.Errorf("affinity %+v; want the required term %+v only", a, mgrTerm)
		}
		if !equality.Semantic.DeepEqual(spec.Tolerations, tolerations(5)) {
			t.Errorf("tolerations %+v; want unreachable and not-ready for 5 s", spec.Tolerations)
		}
		if spec.PriorityClassName != "system-cluster-critical" {
			t.Errorf("priorityClassName %q", spec.PriorityClassName)
		}
		for _, c := range append(slices.Clone(spec.Containers), spec.InitContainers...) {
			if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil || !slices.Equal(c.SecurityContext.Capabilities.Drop, []corev1.Capability{"NET_RAW"}) {
				t.Errorf("container %s: securityContext %+v; want NET_RAW dropped", c.Name, c.SecurityContext)
			}
		}
		m := spec.Containers[0]
		if p := m.StartupProbe; p == nil || p.Exec == nil || p.FailureThreshold != 6 || p.PeriodSeconds != 10 ||
			!strings.Contains(strings.Join(p.Exec.Command, " "), "ceph --admin-daemon /var/run/ceph/ceph-mgr.a.asok status") {
			t.Errorf("startupProbe %+v; want the admin socket, 6 x 10 s", p)
		}
		if l := m.Lifecycle; l == nil || l.PreStop == nil || l.PreStop.Exec == nil || l.PostStart != nil ||
			!slices.Equal(l.PreStop.Exec.Command, []string{"sh", "-c", handOverScript("a")}) {
			t.Errorf("lifecycle %+v; want the preStop hook handing mgr a's active role over", l)
		}
	})
	t.Run("the policy's", func(t *testing.T) {
		p := DefaultPolicy()
		p.Placement.AllowMultiplePerNode = true
		p.Placement.PriorityClassName = "ceph-critical"
		p.Placement.NodeLossTolerationSeconds = ptrTo[int64](30)
		p.StartupProbe.Enabled = ptrTo(false)
		p.HandOver.Enabled = ptrTo(false)
		spec := complete(t, minimal(), p)
		if a := spec.Affinity.PodAntiAffinity; len(a.RequiredDuringSchedulingIgnoredDuringExecution) != 0 ||
			!equality.Semantic.DeepEqual(a.PreferredDuringSchedulingIgnoredDuringExecution, []corev1.WeightedPodAffinityTerm{{Weight: 50, PodAffinityTerm: mgrTerm}}) {
			t.Errorf("anti-affinity %+v; want the term preferred, weight 50", a)
		}
		if !equality.Semantic.DeepEqual(spec.Tolerations, tolerations(30)) || spec.PriorityClassName != "ceph-critical" || spec.Containers[0].StartupProbe != nil {
			t.Errorf("tolerations %+v, priority class %q, startup probe %+v", spec.Tolerations, spec.PriorityClassName, spec.Containers[0].StartupProbe)
		}
		if spec.Containers[0].Lifecycle != nil {
			t.Errorf("lifecycle %+v; the policy turned the hand-over off", spec.Containers[0].Lifecycle)
		}
	})
	t.Run("the user's kept", func(t *testing.T) {
		d := minimal()
		ps := &d.Spec.Template.Spec
		own := &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: mgrTerm}}}
		zone := &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}
		ps.Affinity = &corev1.Affinity{PodAntiAffinity: own, NodeAffinity: zone}
		ps.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo[int64](60)}}
		ps.PriorityClassName = "mine"
		ps.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
		userProbe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(6800)}}, FailureThreshold: 30}
		ps.Containers[0].StartupProbe = userProbe
		userLifecycle := &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}}
		ps.Containers[0].Lifecycle = userLifecycle
		spec := complete(t, d, DefaultPolicy())
		if !equality.Semantic.DeepEqual(spec.Affinity, &corev1.Affinity{PodAntiAffinity: own, NodeAffinity: zone}) {
			t.Errorf("affinity %+v; want the user's", spec.Affinity)
		}
		want := append(slices.Clone(ps.Tolerations[:1]), tolerations(5)[1])
		if !equality.Semantic.DeepEqual(spec.Tolerations, want) {
			t.Errorf("tolerations %+v; want the user's unreachable one and ours for not-ready", spec.Tolerations)
		}
		if spec.PriorityClassName != "mine" || !slices.Equal(spec.Containers[0].SecurityContext.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
			!equality.Semantic.DeepEqual(spec.Containers[0].StartupProbe, userProbe) {
			t.Errorf("priority class %q, capabilities %+v, startup probe %+v; want the user's", spec.PriorityClassName,
				spec.Containers[0].SecurityContext.Capabilities, spec.Containers[0].StartupProbe)
		}
		if !equality.Semantic.DeepEqual(spec.Containers[0].Lifecycle, userLifecycle) {
			t.Errorf("lifecycle %+v; want the user's, without a preStop of ours", spec.Containers[0].Lifecycle)
		}
	})
}

// TestHandOverScript runs the preStop hook under sh with a stand-in ceph CLI
// that answers from canned mgr maps and records its calls: the hook fails
// this pod's daemon by gid, only when it is active and a standby is there,
// never by name, then waits until the respawned daemon is back as a standby.
func TestHandOverScript(t *testing.T) {
	if strings.Contains(handOverPicker, "'") {
		t.Fatal("the picker holds a single quote: the hook quotes it in single quotes")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 runs the hook's picker in every Ceph image; install it to test the hook")
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	ips, err := net.LookupHost(host)
	if err != nil || len(ips) == 0 {
		t.Fatalf("this host's addresses (the pod's, in a pod): %v %v", ips, err)
	}
	here := ips[0]
	if strings.Contains(here, ":") {
		here = "[" + here + "]"
	}
	mgrMap := func(addr string, standbys ...string) string {
		var sb []map[string]any
		for i, n := range standbys {
			sb = append(sb, map[string]any{"gid": 5000 + i, "name": n})
		}
		m, _ := json.Marshal(map[string]any{"active_gid": 4368, "active_name": "a", "active_addr": addr, "standbys": sb})
		return string(m)
	}
	for _, c := range []struct {
		name  string
		dumps []string // the mgr maps the stand-in answers, in turn
		calls []string
	}{
		{"active here, a standby", []string{mgrMap(here+":6801/8292", "b"), mgrMap("192.0.2.9:6801/1", "a")},
			[]string{"mgr dump --format=json", "mgr fail 4368", "mgr dump --format=json"}},
		{"active here, back on the second look", []string{mgrMap(here+":6801/8292", "b"), mgrMap("192.0.2.9:6801/1"), mgrMap("192.0.2.9:6801/1", "a")},
			[]string{"mgr dump --format=json", "mgr fail 4368", "mgr dump --format=json", "mgr dump --format=json"}},
		{"active here, no standby", []string{mgrMap(here + ":6801/8292")}, []string{"mgr dump --format=json"}},
		{"active elsewhere", []string{mgrMap("192.0.2.1:6801/8292", "a")}, []string{"mgr dump --format=json"}},
		{"no active", []string{mgrMap("", "b")}, []string{"mgr dump --format=json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for i, d := range c.dumps {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("dump%d", i)), []byte(d), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// The stand-in: logs the connection flags, CEPH_ARGS and the rest,
			// answers each mgr dump with the next map (the last one again).
			stub := `#!/bin/sh
d=` + dir + `
for a; do case $a in --name=*|--keyring=*|--mon-host=*|--connect-timeout=*) echo "$a" >> $d/flags ;; *) set -- "$@" "$a" ;; esac; shift; done
echo "$*" >> $d/calls
echo "${CEPH_ARGS:-}" >> $d/ceph_args
case "$*" in
"mgr dump --format=json") n=$(cat $d/n 2>/dev/null || echo 0); [ -f $d/dump$n ] && echo $((n+1)) > $d/n || n=$((n-1)); cat $d/dump$n ;;
esac
`
			if err := os.WriteFile(filepath.Join(dir, "ceph"), []byte(stub), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(python, filepath.Join(dir, "python3")); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("sh", "-c", handOverScript("a"))
			cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "ROOK_CEPH_MON_HOST=v2:10.0.0.1:3300", "CEPH_ARGS=--name=client.admin"}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("the hook: %v\n%s", err, out)
			}
			data, _ := os.ReadFile(filepath.Join(dir, "calls"))
			if got := strings.Split(strings.TrimSpace(string(data)), "\n"); !slices.Equal(got, c.calls) {
				t.Errorf("ceph called with %q; want %q", got, c.calls)
			}
			flags, _ := os.ReadFile(filepath.Join(dir, "flags"))
			want := "--name=mgr.a\n--keyring=/etc/ceph/keyring-store/keyring\n--mon-host=v2:10.0.0.1:3300\n--connect-timeout=5\n"
			if string(flags) != strings.Repeat(want, len(c.calls)) {
				t.Errorf("connection flags %q; want mgr a's own key and the pod's mons on every call", flags)
			}
			if env, _ := os.ReadFile(filepath.Join(dir, "ceph_args")); strings.TrimSpace(string(env)) != "" {
				t.Errorf("CEPH_ARGS reached the CLI: %q", env)
			}
		})
	}
}

// withoutRetiredEnv drops the retired variables from every container of spec.
func withoutRetiredEnv(spec *corev1.PodSpec) {
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			list[i].Env = slices.DeleteFunc(list[i].Env, isRetired)
		}
	}
}

// TestRetiredEnvKeepsItsPlace: a fresh mgr gets no ROOK_VERSION, so a new
// operator version restarts no mgr (rook#4361); a mgr an earlier version
// completed with it keeps its variables as they were, value and order, so
// upgrading the webhook restarts none either.
func TestRetiredEnvKeepsItsPlace(t *testing.T) {
	_, fresh := completeFixture(t, fixture{name: "fresh", input: "../manifests/examples/minimal-mgr.yaml", policy: DefaultPolicy()})
	for _, c := range append(slices.Clone(fresh.Deployment.Spec.Template.Spec.InitContainers), fresh.Deployment.Spec.Template.Spec.Containers...) {
		if i := slices.IndexFunc(c.Env, isRetired); i >= 0 {
			t.Errorf("a fresh mgr's %s gets %s", c.Name, c.Env[i].Name)
		}
	}

	in, old := completeFixture(t, fixture{name: "legacy", input: "testdata/legacy-admin-keyring.yaml", policy: DefaultPolicy()})
	envs := func(spec corev1.PodSpec) map[string][]corev1.EnvVar {
		m := map[string][]corev1.EnvVar{}
		for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
			m[c.Name] = c.Env
		}
		return m
	}
	before, after := envs(in.Spec.Template.Spec), envs(old.Deployment.Spec.Template.Spec)
	retired := 0
	for name, env := range before {
		retired += len(slices.DeleteFunc(slices.Clone(env), func(e corev1.EnvVar) bool { return !isRetired(e) }))
		if !equality.Semantic.DeepEqual(env, after[name]) {
			t.Errorf("%s's env, completed again, changed (its Pod would restart):\n got: %v\nwant: %v", name, after[name], env)
		}
	}
	if retired == 0 {
		t.Fatal("the fixture carries no retired variable: this test proves nothing")
	}
}

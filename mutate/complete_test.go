// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"
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
	policy *Policy
}

// fixtures returns every input: testdata/*.yaml and the shipped mgr examples
// (manifests/examples/*-mgr.yaml). A <case>.policy.yaml beside an input
// replaces the default policy.
func fixtures(t testing.TB) []fixture {
	t.Helper()
	var fs []fixture
	inputs, _ := filepath.Glob("testdata/*.yaml")
	examples, _ := filepath.Glob("../manifests/examples/*-mgr.yaml")
	for _, in := range append(inputs, examples...) {
		base := strings.TrimSuffix(filepath.Base(in), ".yaml")
		if strings.HasSuffix(base, ".golden") || strings.HasSuffix(base, ".policy") {
			continue
		}
		f := fixture{name: base, input: in, policy: DefaultPolicy()}
		if strings.HasPrefix(in, "../") {
			f.name = "example-" + base
		}
		if data, err := os.ReadFile(strings.TrimSuffix(in, ".yaml") + ".policy.yaml"); err == nil {
			p, err := ParsePolicy(data)
			if err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			f.policy = p
		}
		fs = append(fs, f)
	}
	if len(fs) < 5 {
		t.Fatalf("found only %d fixtures; run from the mutate directory", len(fs))
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
		golden := filepath.Join("testdata", f.name+".golden.yaml")
		used[golden] = true
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
		if !used[g] {
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

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package inject

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/internal/harness/golden"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

// clusters are the namespaces of mutate's golden corpus.
var clusters = map[string]mutate.ClusterInfo{
	"rook-ceph": {Namespace: "rook-ceph", FSID: "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b"},
	"ceph-east": {Namespace: "ceph-east", FSID: "47913c99-d1ed-4a9b-bd55-2b49490b1229"},
}

func injector(p *mutate.Policy, version string) Injector {
	return Injector{Policy: p, Version: version, Cluster: func(ns string) (mutate.ClusterInfo, error) {
		if info, ok := clusters[ns]; ok {
			return info, nil
		}
		return mutate.ClusterInfo{}, fmt.Errorf("namespace %q is not a Ceph cluster", ns)
	}}
}

func decode(t *testing.T, data []byte) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(data, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestGoldenCorpus: for every input of the webhook's golden corpus, inject
// writes the golden object with the stamp, and a second run changes nothing.
func TestGoldenCorpus(t *testing.T) {
	cases, err := golden.Cases("..")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			p := mutate.DefaultPolicy()
			if c.Policy != "" {
				data, err := os.ReadFile(c.Policy)
				if err != nil {
					t.Fatal(err)
				}
				if p, err = mutate.ParsePolicy(data); err != nil {
					t.Fatal(err)
				}
			}
			src, err := os.ReadFile(c.Input)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(c.Golden)
			if err != nil {
				t.Fatal(err)
			}
			out, docs, err := injector(p, "v9.9.9").Inject(src)
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != 1 || docs[0].Skipped != "" {
				t.Fatalf("docs = %+v, want one governed mgr", docs)
			}
			got := decode(t, out)
			stamp, ok := mutate.StampOf(got)
			if !ok || stamp != (mutate.Stamp{Version: "v9.9.9", Policy: p.Hash()}) {
				t.Errorf("stamp = %+v, %v; want version v9.9.9 and the policy's hash", stamp, ok)
			}
			delete(got.Annotations, contract.AnnotationCompletedBy)
			if len(got.Annotations) == 0 {
				got.Annotations = nil
			}
			if w := decode(t, want); !equality.Semantic.DeepEqual(got, w) {
				t.Errorf("inject differs from %s:\n%s", c.Golden, out)
			}
			again, docs, err := injector(p, "v9.9.9").Inject(out)
			if err != nil || !bytes.Equal(again, out) || len(docs) != 1 || docs[0].Changed != nil {
				t.Errorf("a second inject changed the output (err %v, changed %v):\n%s", err, docs, again)
			}
		})
		n++
	}
	if n < 8 {
		t.Fatalf("only %d inputs found; run from the inject directory", n)
	}
}

const stream = `# The whole site, one file.
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: rook-ceph}   # odd spacing kept
data:
  script: |
    ---
    not a separator: indented
--- # the mgr
# mgr a, minimal
apiVersion: apps/v1
kind: Deployment
metadata:
  name: rook-ceph-mgr-a
  labels: {app: rook-ceph-mgr, mgr: a}
spec:
  template:
    spec:
      containers: [{name: mgr, image: "quay.io/ceph/ceph:v19.2.1"}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: rook-ceph
spec: {}
...
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: rook-ceph-mgr-b
  namespace: rook-ceph
  labels: {app: rook-ceph-mgr, mgr: b}
  ownerReferences: [{apiVersion: ceph.rook.io/v1, kind: CephCluster, name: rook-ceph, uid: 5b4e4a84-0a8f-4f3c-9c5b-6d6e0b3d9d11}]
spec: {template: {spec: {containers: [{name: mgr, image: "quay.io/ceph/ceph:v19.2.1"}]}}}
`

// TestStream: in a stream of several documents only the governed mgr is
// rewritten (its separator and comments kept); every other document, the
// Rook-owned mgr among them, comes back byte for byte.
func TestStream(t *testing.T) {
	in := injector(mutate.DefaultPolicy(), "v1.0.0")
	in.Namespace = "rook-ceph"
	out, docs, err := in.Inject([]byte(stream))
	if err != nil {
		t.Fatal(err)
	}
	src, res := Split([]byte(stream)), Split(out)
	if len(src) != 5 || len(res) != len(src) {
		t.Fatalf("split into %d and %d documents, want 5 each", len(src), len(res))
	}
	for i := range src {
		if i == 2 {
			continue
		}
		if !bytes.Equal(src[i], res[i]) {
			t.Errorf("document %d changed:\n%s\nwant:\n%s", i+1, res[i], src[i])
		}
	}
	if !bytes.HasPrefix(res[2], []byte("--- # the mgr\n# mgr a, minimal\napiVersion: apps/v1\n")) {
		t.Errorf("the mgr lost its separator or comment:\n%s", res[2])
	}
	d := decode(t, res[2])
	if d.Namespace != "" || len(d.Spec.Template.Spec.Containers[0].Args) < 10 || d.Spec.Selector == nil {
		t.Errorf("the mgr was not completed (or gained a namespace):\n%s", res[2])
	}
	if bytes.Contains(res[2], []byte("creationTimestamp")) || bytes.Contains(res[2], []byte("status:")) {
		t.Errorf("the manifest carries a typed object's empty fields:\n%s", res[2])
	}
	if len(docs) != 2 || docs[0].Name != "rook-ceph-mgr-a" || docs[0].Changed == nil || docs[1].Skipped == "" {
		t.Errorf("docs = %+v, want mgr a completed and mgr b skipped", docs)
	}
}

// TestOlderRelease: the output of an older release gets this release's
// stamp, and is stable from then on.
func TestOlderRelease(t *testing.T) {
	src, err := os.ReadFile("../manifests/examples/minimal-mgr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	old, _, err := injector(mutate.DefaultPolicy(), "v0.0.9").Inject(src)
	if err != nil {
		t.Fatal(err)
	}
	cur, docs, err := injector(mutate.DefaultPolicy(), "v0.1.0").Inject(old)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 || strings.Join(docs[0].Changed, ",") != "annotations" {
		t.Errorf("changed %v, want only the stamp's annotations", docs)
	}
	if s, _ := mutate.StampOf(decode(t, cur)); s.Version != "v0.1.0" {
		t.Errorf("stamp %+v, want v0.1.0's", s)
	}
	again, _, err := injector(mutate.DefaultPolicy(), "v0.1.0").Inject(cur)
	if err != nil || !bytes.Equal(again, cur) {
		t.Errorf("not stable: %v\n%s", err, again)
	}
}

func TestRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		doc, namespace, want string
	}{
		"privileged": {
			doc:       "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: rook-ceph-mgr-a, namespace: rook-ceph, labels: {app: rook-ceph-mgr, mgr: a}}\nspec: {template: {spec: {containers: [{name: mgr, image: 'quay.io/ceph/ceph:v19.2.1', securityContext: {privileged: true}}]}}}\n",
			namespace: "",
			want:      "document 1 (deployment/rook-ceph-mgr-a in rook-ceph) is refused by the policy: spec.template.spec.containers[0].securityContext.privileged",
		},
		"no namespace": {
			doc:  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: rook-ceph-mgr-a, labels: {app: rook-ceph-mgr, mgr: a}}\nspec: {template: {spec: {containers: [{name: mgr, image: 'quay.io/ceph/ceph:v19.2.1'}]}}}\n",
			want: "has no metadata.namespace: set it, or name the namespace (-n)",
		},
		"not a cluster": {
			doc:  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: rook-ceph-mgr-a, namespace: web, labels: {app: rook-ceph-mgr, mgr: a}}\nspec: {template: {spec: {containers: [{name: mgr, image: 'quay.io/ceph/ceph:v19.2.1'}]}}}\n",
			want: `namespace "web" is not a Ceph cluster`,
		},
		"unknown field": {
			doc:  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: rook-ceph-mgr-a, namespace: rook-ceph, labels: {app: rook-ceph-mgr, mgr: a}}\nspec: {replica: 2}\n",
			want: `unknown field "replica"`,
		},
		"not YAML": {
			doc:  "ok: 1\n---\n: [\n",
			want: "document 2: not YAML",
		},
	} {
		t.Run(name, func(t *testing.T) {
			in := injector(mutate.DefaultPolicy(), "v1")
			in.Namespace = tc.namespace
			out, _, err := in.Inject([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) || out != nil {
				t.Errorf("Inject = %q, %v; want no output and an error with %q", out, err, tc.want)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	for name, src := range map[string]string{
		"empty":             "",
		"one":               "a: 1\n",
		"leading separator": "---\na: 1\n---\nb: 2",
		"comments":          "# x\n--- # y\na: 1\n---\n",
		"crlf":              "a: 1\r\n---\r\nb: 2\r\n",
		"not separators":    "a: |\n  ---\n----\nb: ---\n",
	} {
		t.Run(name, func(t *testing.T) {
			docs := Split([]byte(src))
			if got := string(bytes.Join(docs, nil)); got != src {
				t.Errorf("joined %q, want %q", got, src)
			}
			for _, d := range docs[1:] {
				if !bytes.HasPrefix(d, []byte("---")) {
					t.Errorf("document %q does not start at a separator", d)
				}
			}
		})
	}
	for src, want := range map[string]int{
		"---\na: 1\n":         1, // a leading separator opens the first document
		"a: 1\n\n---\nb: 2\n": 2, // a blank line before a separator
		"a: 1\n---\n\n---\n":  3,
	} {
		if n := len(Split([]byte(src))); n != want {
			t.Errorf("%q: %d documents, want %d", src, n, want)
		}
	}
	if n := len(Split([]byte("a: |\n  ---\n----\nb: ---\n"))); n != 1 {
		t.Errorf("indented ---, ---- and a value --- split into %d documents, want 1", n)
	}
	if n := len(Split([]byte("# x\n--- # y\na: 1\n---\n"))); n != 3 {
		t.Errorf("got %d documents, want 3", n)
	}
}

func TestPreamble(t *testing.T) {
	for raw, want := range map[string]string{
		"--- # x\n# a\n\n  # b\napiVersion: v1\n": "--- # x\n# a\n\n  # b\n",
		"\n\n---\nkind: A\n":                      "\n\n---\n",
		"apiVersion: v1\n":                        "",
		"# only a comment, no line end":           "",
	} {
		if got := string(preamble([]byte(raw))); got != want {
			t.Errorf("preamble(%q) = %q, want %q", raw, got, want)
		}
	}
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package inject

import (
	"os"
	"testing"

	"github.com/aymanbagabas/go-udiff"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/rook-mgr/mgr-webhook/internal/harness/golden"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

// written is a mgr as a user lays it out: comments between and after keys,
// spec before metadata, quoted scalars, a list at its key's column.
const written = `# the site's mgr
apiVersion: apps/v1
kind: Deployment
spec:
  # one mgr, one pod
  template:
    spec:
      containers:
      - name: mgr # the daemon
        image: "quay.io/ceph/ceph:v19.2.3"
metadata:
  namespace: rook-ceph
  name: rook-ceph-mgr-a
  labels:
    mgr: a # the mgr's id
    app: rook-ceph-mgr
`

// fourSpaces is written with four spaces a level, its list indented (a
// list item's keys two spaces past its dash, as yaml.v3 writes them).
const fourSpaces = `apiVersion: apps/v1
kind: Deployment
metadata:
    name: rook-ceph-mgr-a # mgr a
    namespace: rook-ceph
    labels:
        app: rook-ceph-mgr
        mgr: a
spec:
    template:
        spec:
            containers:
                # the only container
                - name: mgr
                  image: quay.io/ceph/ceph:v19.2.3
`

// TestInjectKeepsTheUsersLayout: inject writes a mgr over the user's own
// layout: every line the user wrote is still there, in its order, with its
// comments and quotes, so a diff of the input and the output adds lines and
// removes none; the output is the completed Deployment.
func TestInjectKeepsTheUsersLayout(t *testing.T) {
	for name, src := range map[string]string{"as a user writes it": written, "four spaces, lists indented": fourSpaces} {
		t.Run(name, func(t *testing.T) {
			out, docs, err := injector(mutate.DefaultPolicy(), "v1.0.0").Inject([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != 1 || len(docs[0].Changed) == 0 {
				t.Fatalf("docs %+v: the mgr was not completed", docs)
			}
			for _, edit := range udiff.Lines(src, string(out)) {
				if edit.End > edit.Start {
					t.Errorf("inject rewrote the user's line(s) %q:\n%s", src[edit.Start:edit.End], udiff.Unified("written", "injected", src, string(out)))
				}
			}
			res, _ := mutate.Complete(decode(t, []byte(src)), clusters["rook-ceph"], mutate.DefaultPolicy())
			mutate.StampInPlace(res.Deployment, mutate.Stamp{Version: "v1.0.0", Policy: mutate.DefaultPolicy().Hash()})
			if got := decode(t, out); !equalDeployments(got, res.Deployment) {
				t.Errorf("the output is not the completed Deployment:\n%s", out)
			}
		})
	}
}

// TestLayoutOverTheCorpus: over the whole golden corpus, an input written
// back over its own layout decodes to what the plain rendering does.
func TestLayoutOverTheCorpus(t *testing.T) {
	cases, err := golden.Cases("..")
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			raw := readFile(t, c.Input)
			d := decode(t, raw)
			res, _ := mutate.Complete(d, clusters[d.Namespace], mutate.DefaultPolicy())
			text, ok := keepLayout(raw[len(preamble(raw)):], res.Deployment)
			if !ok {
				return // the plain rendering serves; TestGoldenCorpus checks it
			}
			kept++
			if got := decode(t, text); !equalDeployments(got, res.Deployment) {
				t.Errorf("the kept layout decodes to another Deployment:\n%s", text)
			}
		})
	}
	if kept == 0 {
		t.Error("no input of the corpus kept its layout: keepLayout always falls back")
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func equalDeployments(a, b *appsv1.Deployment) bool { return equality.Semantic.DeepEqual(a, b) }

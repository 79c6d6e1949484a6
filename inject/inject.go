// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package inject completes the mgr Deployments of a YAML stream as the
// mutating webhook would admit them, offline: the same mutate code, the
// same stamp, the same judgement by the policy. Every other document of the
// stream, and every mgr document that needs no change, is written back
// byte for byte, so running it over a file twice, or over its own output
// of an older release, changes nothing a second time. It does no I/O: the
// caller reads the file and says which cluster a namespace is.
package inject

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

// Injector completes mgr Deployments as the webhook of Version enforcing
// Policy would.
type Injector struct {
	Policy *mutate.Policy
	// Version is stamped with the policy's hash on every mgr completed.
	Version string
	// Cluster returns the Ceph cluster of a namespace (its fsid).
	Cluster func(namespace string) (mutate.ClusterInfo, error)
	// Namespace is that of documents without one (kubectl's -n).
	Namespace string
}

// Doc is what became of one mgr document of the stream.
type Doc struct {
	Index           int // 0-based, in the stream
	Namespace, Name string
	// Skipped says why the policy does not govern it ("" when it does).
	Skipped string
	// Changed lists the sections completion changed (nil: none).
	Changed []string
	// Warnings are completion's and the Warn rules'; Audits the Audit rules'.
	Warnings, Audits []string
	// Deny are the violations that refuse it.
	Deny field.ErrorList
}

// Ref is the document as kubectl names it, with its place in the stream.
func (d Doc) Ref() string {
	return fmt.Sprintf("document %d (deployment/%s in %s)", d.Index+1, d.Name, d.Namespace)
}

// separator is a YAML document separator line.
var separator = regexp.MustCompile(`^---(\s.*)?$`)

// Split cuts a YAML stream into its documents, each with the separator line
// before it (if any): concatenated, they are src again.
func Split(src []byte) [][]byte {
	var docs [][]byte
	start := 0
	for off := 0; off < len(src); {
		end := bytes.IndexByte(src[off:], '\n')
		next := len(src)
		if end >= 0 {
			next = off + end + 1
		}
		if separator.Match(bytes.TrimRight(src[off:next], "\r\n")) && off > start {
			docs = append(docs, src[start:off])
			start = off
		}
		off = next
	}
	// The last document (or the whole of an empty stream).
	return append(docs, src[start:])
}

// header is what tells a mgr Deployment from any other document.
type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
}

// Inject completes every mgr Deployment of src the policy governs and
// returns the stream with them, and what became of each. A document the
// policy's Deny rules refuse, or that cannot be read, is an error (out is
// then nil); docs still says what became of every mgr.
func (in Injector) Inject(src []byte) (out []byte, docs []Doc, err error) {
	var b bytes.Buffer
	var errs []string
	for i, raw := range Split(src) {
		text, doc, isMgr, err := in.document(i, raw)
		if isMgr {
			docs = append(docs, doc)
		}
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("document %d: %v", i+1, err))
		case len(doc.Deny) > 0:
			errs = append(errs, fmt.Sprintf("%s is refused by the policy: %v", doc.Ref(), doc.Deny.ToAggregate()))
		}
		b.Write(text)
	}
	if len(errs) > 0 {
		return nil, docs, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return b.Bytes(), docs, nil
}

// document completes raw if it is a governed mgr Deployment, and returns it
// unchanged otherwise.
func (in Injector) document(i int, raw []byte) ([]byte, Doc, bool, error) {
	var h header
	if err := yaml.Unmarshal(raw, &h); err != nil {
		return raw, Doc{}, false, fmt.Errorf("not YAML: %w", err)
	}
	if h.APIVersion != "apps/v1" || h.Kind != "Deployment" || h.Metadata.Labels[contract.LabelApp] != contract.AppName {
		return raw, Doc{}, false, nil
	}
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(raw, d); err != nil {
		return raw, Doc{Index: i, Name: h.Metadata.Name}, true, fmt.Errorf("deployment/%s: %w", h.Metadata.Name, err)
	}
	ns := d.Namespace
	if ns == "" {
		ns = in.Namespace
	}
	doc := Doc{Index: i, Namespace: ns, Name: d.Name}
	if ns == "" {
		return raw, doc, true, fmt.Errorf("deployment/%s has no metadata.namespace: set it, or name the namespace (-n)", d.Name)
	}
	// Offline there is no CephCluster to check an owner reference against:
	// one is taken for Rook's, which the webhook checks live.
	if !in.Policy.Governs(ns, d.Name, true, contract.RookOwner(d) != nil) {
		doc.Skipped = "exempt by the policy, or owned by a CephCluster (Rook's own)"
		return raw, doc, true, nil
	}
	info, err := in.Cluster(ns)
	if err != nil {
		return raw, doc, true, err
	}
	res, errs := mutate.CompleteInPlace(d, info, in.Policy)
	doc.Warnings = res.Warnings
	if len(errs) > 0 {
		doc.Deny = errs
		return raw, doc, true, nil
	}
	if mutate.StampInPlace(res.Deployment, mutate.Stamp{Version: in.Version, Policy: in.Policy.Hash()}) {
		res.Changed |= mutate.SectionAnnotations
	}
	v := in.Policy.Judge(mutate.Validate(res.Deployment, info, in.Policy))
	doc.Deny = v.Deny
	for _, e := range v.Warn {
		doc.Warnings = append(doc.Warnings, in.Policy.Describe(e))
	}
	for _, e := range v.Audit {
		doc.Audits = append(doc.Audits, in.Policy.Describe(e))
	}
	if res.Changed == 0 {
		return raw, doc, true, nil
	}
	doc.Changed = mutate.SectionNames(res.Changed)
	if text, ok := keepLayout(raw[len(preamble(raw)):], res.Deployment); ok {
		return append(preamble(raw), text...), doc, true, nil
	}
	text, err := Render(res.Deployment)
	if err != nil {
		return raw, doc, true, err
	}
	return append(preamble(raw), text...), doc, true, nil
}

// preamble is what comes before raw's first line of content: the
// separator, blank lines and comments, kept as the user wrote them.
func preamble(raw []byte) []byte {
	n := 0
	for _, line := range bytes.SplitAfter(raw, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if !bytes.HasSuffix(line, []byte("\n")) || len(t) > 0 && t[0] != '#' && !separator.Match(t) {
			break
		}
		n += len(line)
	}
	return raw[:n]
}

// Render writes d as a manifest: without the empty status a typed object
// marshals to.
func Render(d *appsv1.Deployment) ([]byte, error) {
	data, err := yaml.Marshal(d)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if s, ok := m["status"].(map[string]any); ok && len(s) == 0 {
		delete(m, "status")
	}
	return yaml.Marshal(m)
}

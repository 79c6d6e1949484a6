// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// requestedSidecars parses the inject annotation: names, comma-separated.
func requestedSidecars(annotations map[string]string) []string {
	var names []string
	for _, n := range contract.SplitList(annotations[contract.AnnotationInjectSidecars]) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// sidecarStatus maps each injected sidecar to the hash of the policy spec it
// was injected from. It is stored as "name=hash,name=hash", sorted by name.
type sidecarStatus map[string]string

func parseSidecarStatus(s string) sidecarStatus {
	st := sidecarStatus{}
	for _, kv := range contract.SplitList(s) {
		if name, hash, ok := strings.Cut(kv, "="); ok && name != "" {
			st[name] = hash
		}
	}
	return st
}

func (st sidecarStatus) String() string {
	names := make([]string, 0, len(st))
	for n := range st {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		names[i] = n + "=" + st[n]
	}
	return strings.Join(names, ",")
}

// sidecarHash identifies a policy sidecar spec, so a policy change is noticed.
func sidecarHash(c corev1.Container) string {
	b, _ := json.Marshal(c) // a Container always marshals
	h := fnv.New64a()
	h.Write(b)
	return fmt.Sprintf("%016x", h.Sum64())
}

// injectSidecars makes the Pod's sidecars match the annotation and the policy.
// Only containers recorded in the status annotation are ever removed or
// replaced; a container the user wrote under a sidecar's name is left alone.
func (c *completer) injectSidecars() {
	anns := c.d.Annotations
	prev := parseSidecarStatus(anns[contract.AnnotationSidecarStatus])
	requested := requestedSidecars(anns)
	if len(prev) == 0 && len(requested) == 0 {
		return
	}
	spec := &c.d.Spec.Template.Spec
	next := sidecarStatus{}
	desired := map[string]string{}
	for _, name := range requested {
		if sc, ok := c.p.Sidecars[name]; ok {
			sc.Name = name
			desired[name] = sidecarHash(sc)
		}
	}
	// Remove what we injected before and no longer want in that form.
	for name, hash := range prev {
		if desired[name] == hash && hasContainer(spec.Containers, name) {
			next[name] = hash
			continue
		}
		if i := containerIndex(spec.Containers, name); i >= 0 {
			spec.Containers = slices.Delete(spec.Containers, i, i+1)
			c.mark(SectionContainers, true)
			// Removed because the policy dropped it, not because the user did.
			if _, offered := desired[name]; !offered && slices.Contains(requested, name) {
				c.warn("sidecar %q removed: still requested, but the policy no longer offers it", name)
			}
		}
	}
	for _, name := range requested {
		hash, ok := desired[name]
		if !ok {
			continue // Validate refuses names the policy does not offer.
		}
		if _, done := next[name]; done {
			continue
		}
		if hasContainer(spec.Containers, name) {
			c.warn("sidecar %q not injected: the Deployment already has a container of that name", name)
			continue
		}
		policySpec := c.p.Sidecars[name]
		sc := *policySpec.DeepCopy()
		sc.Name = name
		spec.Containers = append(spec.Containers, sc)
		next[name] = hash
		c.mark(SectionContainers, true)
	}
	if s := next.String(); s != anns[contract.AnnotationSidecarStatus] {
		if s == "" {
			delete(c.d.Annotations, contract.AnnotationSidecarStatus)
		} else {
			if c.d.Annotations == nil {
				c.d.Annotations = map[string]string{}
			}
			c.d.Annotations[contract.AnnotationSidecarStatus] = s
		}
		c.mark(SectionAnnotations, true)
	}
}

func containerIndex(cs []corev1.Container, name string) int {
	return slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == name })
}

func hasContainer(cs []corev1.Container, name string) bool { return containerIndex(cs, name) >= 0 }

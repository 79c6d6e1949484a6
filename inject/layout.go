// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package inject

import (
	"bytes"
	"regexp"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	sigsyaml "sigs.k8s.io/yaml"
)

// keepLayout writes d, the completion of raw, over raw's own layout: its
// comments, key order, quoting and indentation stay; only what completion
// adds or changes is written anew (so a diff of raw and the result is the
// completion alone). The result is decoded again and must be d; when it is
// not (an anchor, a layout the encoder cannot keep), ok is false and the
// caller renders d plainly.
func keepLayout(raw []byte, d *appsv1.Deployment) ([]byte, bool) {
	rendered, err := Render(d)
	if err != nil {
		return nil, false
	}
	var have, want yaml.Node
	if yaml.Unmarshal(raw, &have) != nil || yaml.Unmarshal(rendered, &want) != nil ||
		have.Kind != yaml.DocumentNode || want.Kind != yaml.DocumentNode || len(have.Content) != 1 || len(want.Content) != 1 {
		return nil, false
	}
	overlay(have.Content[0], want.Content[0])

	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	indent, compact := layoutOf(raw)
	enc.SetIndent(indent)
	if compact {
		enc.CompactSeqIndent()
	}
	if enc.Encode(&have) != nil || enc.Close() != nil {
		return nil, false
	}
	got := &appsv1.Deployment{}
	if err := sigsyaml.UnmarshalStrict(b.Bytes(), got); err != nil || !equality.Semantic.DeepEqual(got, d) {
		return nil, false
	}
	return b.Bytes(), true
}

// overlay makes dst (the user's node) hold src's value, keeping dst's nodes,
// and with them their comments and style, wherever the value is the same.
func overlay(dst, src *yaml.Node) {
	switch {
	case dst.Kind == yaml.MappingNode && src.Kind == yaml.MappingNode:
		overlayMapping(dst, src)
	case dst.Kind == yaml.SequenceNode && src.Kind == yaml.SequenceNode:
		overlaySequence(dst, src)
	case dst.Kind == yaml.ScalarNode && src.Kind == yaml.ScalarNode && dst.Value == src.Value && dst.ShortTag() == src.ShortTag():
		// the same value as written: kept as written
	default:
		replace(dst, src)
	}
}

// replace puts src in dst's place, keeping the comments around dst.
func replace(dst, src *yaml.Node) {
	head, line, foot := dst.HeadComment, dst.LineComment, dst.FootComment
	*dst = *src
	dst.HeadComment, dst.LineComment, dst.FootComment = head, line, foot
	dst.Style &^= yaml.FlowStyle
}

func overlayMapping(dst, src *yaml.Node) {
	var content []*yaml.Node
	for i := 0; i+1 < len(src.Content); i += 2 {
		key, value := src.Content[i], src.Content[i+1]
		j := keyIndex(dst, key.Value)
		if j < 0 {
			content = append(content, key, value)
			continue
		}
		overlay(dst.Content[j+1], value)
		content = append(content, dst.Content[j], dst.Content[j+1])
	}
	// The user's order for the keys that were there; new keys where
	// completion's order puts them relative to the user's keys would move
	// lines: they go after the user's, in completion's order.
	var kept, added []*yaml.Node
	for i := 0; i+1 < len(content); i += 2 {
		if keyIndex(dst, content[i].Value) >= 0 {
			continue
		}
		added = append(added, content[i], content[i+1])
	}
	for i := 0; i+1 < len(dst.Content); i += 2 {
		if keyIndex(src, dst.Content[i].Value) < 0 {
			continue // completion dropped it
		}
		kept = append(kept, dst.Content[i], dst.Content[i+1])
	}
	dst.Content = append(kept, added...)
	if len(dst.Content) > 0 && dst.Style&yaml.FlowStyle != 0 && len(added) > 0 {
		dst.Style &^= yaml.FlowStyle // a {} that now holds keys is written in block style
	}
}

func keyIndex(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// nameOf is the name of a list entry that has one (containers, env,
// volumes, ports, mounts), "" otherwise.
func nameOf(n *yaml.Node) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	if i := keyIndex(n, "name"); i >= 0 {
		return n.Content[i+1].Value
	}
	if i := keyIndex(n, "mountPath"); i >= 0 {
		return "mountPath=" + n.Content[i+1].Value
	}
	return ""
}

// overlaySequence matches entries by name where they have one, else by
// position; the order is completion's.
func overlaySequence(dst, src *yaml.Node) {
	used := make([]bool, len(dst.Content))
	out := make([]*yaml.Node, 0, len(src.Content))
	for i, s := range src.Content {
		j := -1
		if name := nameOf(s); name != "" {
			for k, d := range dst.Content {
				if !used[k] && nameOf(d) == name {
					j = k
					break
				}
			}
		} else if i < len(dst.Content) && !used[i] && nameOf(dst.Content[i]) == "" {
			j = i
		}
		if j < 0 {
			out = append(out, s)
			continue
		}
		used[j] = true
		overlay(dst.Content[j], s)
		out = append(out, dst.Content[j])
	}
	dst.Content = out
	if len(out) > 0 && dst.Style&yaml.FlowStyle != 0 {
		dst.Style &^= yaml.FlowStyle
	}
}

var keyLine = regexp.MustCompile(`(?m)^( *)[^\s#-][^:\n]*:\s*$`)

// layoutOf guesses raw's indentation: the spaces a mapping nests by, and
// whether a list's "- " sits at its key's column (compact) or deeper.
func layoutOf(raw []byte) (indent int, compact bool) {
	indent = 2
	lines := bytes.Split(raw, []byte("\n"))
	seenIndent, seenSeq := false, false
	for i := 0; i+1 < len(lines) && !(seenIndent && seenSeq); i++ {
		m := keyLine.FindSubmatch(lines[i])
		if m == nil {
			continue
		}
		col := len(m[1])
		next := lines[i+1]
		trimmed := bytes.TrimLeft(next, " ")
		nextCol := len(next) - len(trimmed)
		switch {
		case bytes.HasPrefix(trimmed, []byte("- ")) && !seenSeq:
			seenSeq, compact = true, nextCol == col
		case nextCol > col && len(trimmed) > 0 && trimmed[0] != '#' && !seenIndent:
			seenIndent, indent = true, nextCol-col
		}
	}
	return indent, compact
}

// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// mutant is one one-token change of a shipped YAML file.
type mutant struct {
	file string
	// key names the change by the object and the field, not by line, so
	// that the list of equivalent mutants survives edits elsewhere.
	key        string
	line       int
	start, end int // byte offsets of the replaced text
	repl       string
}

func (m mutant) apply(src []byte) []byte {
	out := slices.Clone(src[:m.start])
	out = append(out, m.repl...)
	return append(out, src[m.end:]...)
}

// admissionKinds are the objects whose scope the API server decides by.
var admissionKinds = []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy"}

// templateAction is a Helm template action; masked, the chart parses as YAML.
var (
	templateAction = regexp.MustCompile(`\{\{.*?\}\}`)
	elseAction     = regexp.MustCompile(`^\{\{-? *else\b.*\}\}\s*$`)
)

// mask makes a chart template parse as YAML without moving any byte: a line
// that is an action alone becomes a comment (an else at the margin a
// document separator), an action within a line x's of its length.
func mask(src []byte) []byte {
	lines := bytes.SplitAfter(slices.Clone(src), []byte("\n"))
	for _, l := range lines {
		trimmed := bytes.TrimLeft(l, " ")
		if bytes.HasPrefix(trimmed, []byte("{{")) && len(bytes.TrimSpace(templateAction.ReplaceAll(trimmed, nil))) == 0 {
			// An else at the margin starts another version of the object.
			if elseAction.Match(l) {
				copy(l, "---")
				for j := 3; j < len(bytes.TrimRight(l, "\n")); j++ {
					l[j] = ' '
				}
				continue
			}
			i := bytes.Index(l, []byte("{{"))
			l[i] = '#'
			continue
		}
		for _, loc := range templateAction.FindAllIndex(l, -1) {
			for j := loc[0]; j < loc[1]; j++ {
				l[j] = 'x'
			}
		}
	}
	return bytes.Join(lines, nil)
}

// enumerate lists every mutant of one file (its repository path and text).
func enumerate(file string, src []byte) ([]mutant, error) {
	parsed := src
	if bytes.Contains(src, []byte("{{")) {
		parsed = mask(src)
	}
	lineStart := []int{0, 0} // lineStart[n] is the offset of line n (1-based)
	for i, c := range src {
		if c == '\n' {
			lineStart = append(lineStart, i+1)
		}
	}
	e := &enumerator{file: file, src: src, masked: parsed, lineStart: lineStart}
	dec := yaml.NewDecoder(bytes.NewReader(parsed))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		root := doc.Content[0]
		e.kind, e.name = scalar(root, "kind"), ""
		if md := field(root, "metadata"); md != nil {
			e.name = scalar(md, "name")
		}
		e.lines = nil
		collectLines(root, &e.lines)
		slices.Sort(e.lines)
		e.walk(root, "")
	}
	// A mutant must be YAML still: one that is not would fail every test
	// and pass for killed.
	for _, m := range e.out {
		if err := parses(mask(m.apply(src))); err != nil {
			return nil, fmt.Errorf("mutant %s is not YAML: %w", m.key, err)
		}
	}
	return e.out, nil
}

func parses(src []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

type enumerator struct {
	file        string
	src, masked []byte
	lineStart   []int
	kind, name  string
	lines       []int // every node's line in the document
	out         []mutant
}

func field(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalar(m *yaml.Node, key string) string {
	if n := field(m, key); n != nil && n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return ""
}

func collectLines(n *yaml.Node, into *[]int) {
	*into = append(*into, n.Line)
	for _, c := range n.Content {
		collectLines(c, into)
	}
}

func (e *enumerator) add(path, what string, start, end int, repl string) {
	line := 1
	for line+1 < len(e.lineStart) && e.lineStart[line+1] <= start {
		line++
	}
	e.out = append(e.out, mutant{
		file: e.file, line: line, start: start, end: end, repl: repl,
		key: fmt.Sprintf("%s %s/%s %s: %s", e.file, e.kind, e.name, path, what),
	})
}

// span is the text of scalar n in the source, when it is the value written
// there (not a masked template action).
func (e *enumerator) span(n *yaml.Node) (int, int, bool) {
	start := e.lineStart[n.Line] + n.Column - 1
	if start >= len(e.src) {
		return 0, 0, false
	}
	var end int
	switch e.src[start] {
	case '"', '\'':
		q := e.src[start]
		end = bytes.IndexByte(e.src[start+1:], q)
		if end < 0 {
			return 0, 0, false
		}
		end += start + 2
		if string(e.src[start+1:end-1]) != n.Value {
			return 0, 0, false
		}
	default:
		end = start + len(n.Value)
		if end > len(e.src) || string(e.src[start:end]) != n.Value {
			return 0, 0, false
		}
	}
	if !bytes.Equal(e.src[start:end], e.masked[start:end]) {
		return 0, 0, false
	}
	return start, end, true
}

// replace mutates scalar n to value v, quoted as it was.
func (e *enumerator) replace(n *yaml.Node, path, v string) {
	start, end, ok := e.span(n)
	if !ok || v == "" {
		return
	}
	repl := v
	if q := e.src[start]; q == '"' || q == '\'' {
		repl = string(q) + v + string(q)
	} else if v == "*" {
		repl = `"*"` // a plain * is an alias
	}
	e.add(path, fmt.Sprintf("%q -> %q", n.Value, v), start, end, repl)
}

// changed is a value that no rule matches.
func changed(v string) string {
	if v == "" {
		return "x"
	}
	return v + "-x"
}

func (e *enumerator) walk(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := path + "." + k.Value
			e.rule(k.Value, v, p, path, k)
			e.walk(v, p)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			e.walk(c, fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

// rule adds the mutants of the rule at key (value v, path p, parent path).
func (e *enumerator) rule(key string, v *yaml.Node, p, parent string, k *yaml.Node) {
	admission := slices.Contains(admissionKinds, e.kind)
	rbacRole := e.kind == "ClusterRole" || e.kind == "Role"
	binding := e.kind == "ClusterRoleBinding" || e.kind == "RoleBinding"
	transformer := e.kind == "Kustomization" || e.kind == "ReplacementTransformer"
	inSelector := strings.Contains(parent, "Selector")
	switch {
	case admission && key == "expression" && strings.Contains(parent, "matchConditions"):
		e.cel(v, p)
	case admission && inSelector && strings.HasSuffix(parent, ".matchLabels") && v.Kind == yaml.ScalarNode:
		e.replace(v, p, changed(v.Value))
	case admission && inSelector && key == "operator":
		flip := map[string]string{"In": "NotIn", "NotIn": "In", "Exists": "DoesNotExist", "DoesNotExist": "Exists"}
		e.replace(v, p, flip[v.Value])
	case admission && inSelector && (key == "values" || key == "key"):
		e.items(v, p)
	case admission && (strings.Contains(parent, "rules") || strings.Contains(parent, "Rules")) && slices.Contains([]string{"operations", "resources", "apiGroups"}, key):
		e.items(v, p)
	case admission && key == "failurePolicy" && parent != "":
		e.replace(v, p, map[string]string{"Fail": "Ignore", "Ignore": "Fail"}[v.Value])
	case rbacRole && slices.Contains([]string{"verbs", "resources", "resourceNames", "apiGroups"}, key):
		e.items(v, p)
		if key == "verbs" && len(v.Content) > 0 {
			e.replace(v.Content[0], p+"[0]", "*")
		}
		if key == "resourceNames" {
			e.drop(k, v, p)
		}
	case binding && (strings.HasSuffix(parent, "subjects") || strings.Contains(parent, "subjects[") || strings.HasSuffix(parent, ".roleRef")) && (key == "name" || key == "namespace") && v.Kind == yaml.ScalarNode:
		e.replace(v, p, changed(v.Value))
	case transformer && (strings.HasSuffix(parent, ".select") || strings.HasSuffix(parent, ".target")) && v.Kind == yaml.ScalarNode:
		e.replace(v, p, changed(v.Value))
	case transformer && key == "fieldPaths":
		e.items(v, p)
	}
}

func (e *enumerator) items(v *yaml.Node, p string) {
	if v.Kind == yaml.ScalarNode {
		e.replace(v, p, changed(v.Value))
		return
	}
	for i, c := range v.Content {
		if c.Kind == yaml.ScalarNode {
			e.replace(c, fmt.Sprintf("%s[%d]", p, i), changed(c.Value))
		}
	}
}

// drop removes key k and its block sequence v (every name allowed).
func (e *enumerator) drop(k, v *yaml.Node, p string) {
	last := k.Line
	for _, c := range v.Content {
		last = max(last, c.Line)
	}
	if last+1 >= len(e.lineStart) {
		return
	}
	start, end := e.lineStart[k.Line], e.lineStart[last+1]
	if !bytes.Equal(e.src[start:end], e.masked[start:end]) {
		return
	}
	e.add(p, "removed", start, end, "")
}

// celToken is one mutable token of a CEL expression.
var celToken = regexp.MustCompile(`==|!=|&&|\|\||>=|<=|>|<|!|\bstartsWith\b|\bendsWith\b|\b[0-9]+\b`)

var celSwap = map[string]string{
	"==": "!=", "!=": "==", "&&": "||", "||": "&&", ">=": ">", "<=": "<", ">": ">=", "<": "<=", "!": "",
	"startsWith": "endsWith", "endsWith": "startsWith",
}

// cel mutates each operator, number and string literal of the expression
// whose scalar is v, in the text as written (a block scalar's lines, or a
// quoted scalar's, where a literal's quote is doubled).
func (e *enumerator) cel(v *yaml.Node, p string) {
	from := e.lineStart[v.Line] + v.Column - 1
	if v.Style&(yaml.FoldedStyle|yaml.LiteralStyle) != 0 {
		from = e.lineStart[v.Line+1]
	}
	next := len(e.lineStart) - 1
	for _, l := range e.lines {
		if l > v.Line {
			next = l
			break
		}
	}
	to := len(e.src)
	if next < len(e.lineStart) {
		to = e.lineStart[next]
	}
	text := e.src[from:to]
	if !bytes.Equal(text, e.masked[from:to]) {
		return
	}
	quote := "'"
	if v.Style&yaml.SingleQuotedStyle != 0 {
		quote = "''"
	}
	// Literals first: their text is not scanned for operators.
	literal := regexp.MustCompile(regexp.QuoteMeta(quote) + `([^']*)` + regexp.QuoteMeta(quote))
	var skip [][]int
	for i, loc := range literal.FindAllSubmatchIndex(text, -1) {
		skip = append(skip, loc[:2])
		s, end := from+loc[2], from+loc[3]
		e.add(p, fmt.Sprintf("literal #%d %q -> %q", i+1, text[loc[2]:loc[3]], changed(string(text[loc[2]:loc[3]]))), s, end, changed(string(text[loc[2]:loc[3]])))
	}
	counts := map[string]int{}
	for _, loc := range celToken.FindAllIndex(text, -1) {
		if slices.ContainsFunc(skip, func(s []int) bool { return loc[0] >= s[0] && loc[0] < s[1] }) {
			continue
		}
		tok := string(text[loc[0]:loc[1]])
		counts[tok]++
		if n, err := strconv.Atoi(tok); err == nil {
			for _, r := range []int{n + 1, n - 1} {
				if r >= 0 {
					e.add(p, fmt.Sprintf("%s #%d -> %d", tok, counts[tok], r), from+loc[0], from+loc[1], strconv.Itoa(r))
				}
			}
			continue
		}
		e.add(p, fmt.Sprintf("%q #%d -> %q", tok, counts[tok], celSwap[tok]), from+loc[0], from+loc[1], celSwap[tok])
	}
}

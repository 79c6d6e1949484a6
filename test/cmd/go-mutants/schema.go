// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"maps"
	"slices"
	"strings"
)

// The mutant types gremlins v0.6.0 enables by default, and the token each
// turns an operator into (its internal/engine/mappings.go). A binary or
// unary minus is two mutants that make the same change, as in gremlins.
var mutations = map[token.Token][]struct {
	typ string
	to  token.Token
}{
	token.ADD: {{"ARITHMETIC_BASE", token.SUB}},
	token.SUB: {{"INVERT_NEGATIVES", token.ADD}, {"ARITHMETIC_BASE", token.ADD}},
	token.MUL: {{"ARITHMETIC_BASE", token.QUO}},
	token.QUO: {{"ARITHMETIC_BASE", token.MUL}},
	token.REM: {{"ARITHMETIC_BASE", token.MUL}},
	token.EQL: {{"CONDITIONALS_NEGATION", token.NEQ}},
	token.NEQ: {{"CONDITIONALS_NEGATION", token.EQL}},
	token.LSS: {{"CONDITIONALS_BOUNDARY", token.LEQ}, {"CONDITIONALS_NEGATION", token.GEQ}},
	token.LEQ: {{"CONDITIONALS_BOUNDARY", token.LSS}, {"CONDITIONALS_NEGATION", token.GTR}},
	token.GTR: {{"CONDITIONALS_BOUNDARY", token.GEQ}, {"CONDITIONALS_NEGATION", token.LEQ}},
	token.GEQ: {{"CONDITIONALS_BOUNDARY", token.GTR}, {"CONDITIONALS_NEGATION", token.LSS}},
	token.INC: {{"INCREMENT_DECREMENT", token.DEC}},
	token.DEC: {{"INCREMENT_DECREMENT", token.INC}},
}

// Status is a mutant's verdict, in gremlins' words.
type Status string

const (
	NotCovered Status = "NOT COVERED"
	NotViable  Status = "NOT VIABLE"
	Killed     Status = "KILLED"
	Lived      Status = "LIVED"
	TimedOut   Status = "TIMED OUT"
)

// Mutant is one operator of the package changed into another.
type Mutant struct {
	ID       int // 1-based; 0 runs the package unchanged
	Type     string
	File     string // absolute
	Pos      token.Position
	From, To token.Token
	node     ast.Node // *ast.BinaryExpr, *ast.UnaryExpr or *ast.IncDecStmt
	// Alone: the mutant cannot sit behind the switch (a constant
	// expression in a context that needs one, a type this file cannot
	// name), so it is built on its own, as gremlins builds every mutant.
	Alone  bool
	Status Status
}

// site is one operator the schema rewrites, with the mutants switched at it.
type site struct {
	node    ast.Node
	mutants []*Mutant
}

// switchVar is the package-level variable that holds the active mutant; the
// test binary reads it from mutantEnv.
const (
	switchVar  = "mutantSchemaActive"
	mutantEnv  = "MGR_WEBHOOK_MUTANT"
	paramX     = "mutantSchemaX"
	paramY     = "mutantSchemaY"
	importName = "mutantSchemaImport"
)

// opPos is where gremlins places a mutant: its operator token.
func opPos(n ast.Node) (token.Pos, token.Token, bool) {
	switch n := n.(type) {
	case *ast.BinaryExpr:
		return n.OpPos, n.Op, true
	case *ast.UnaryExpr:
		return n.OpPos, n.Op, true
	case *ast.IncDecStmt:
		return n.TokPos, n.Tok, true
	}
	return token.NoPos, token.ILLEGAL, false
}

// Enumerate lists a file's mutants in source order, each marked Alone where
// the schema cannot switch it, and NotViable where the change does not type
// check (gremlins counts those as killed: its go test fails to build them).
func Enumerate(fset *token.FileSet, pkg *types.Package, info *types.Info, file *ast.File, path string, nextID *int) []*Mutant {
	var out []*Mutant
	var stack []ast.Node
	ast.Inspect(file, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		pos, tok, ok := opPos(n)
		if !ok {
			return true
		}
		for _, m := range mutations[tok] {
			*nextID++
			mu := &Mutant{ID: *nextID, Type: m.typ, File: path, Pos: fset.Position(pos), From: tok, To: m.to, node: n}
			if !viable(fset, pkg, info, n, m.to) {
				mu.Status = NotViable
			}
			mu.Alone = !switchable(pkg, info, n, stack)
			out = append(out, mu)
		}
		return true
	})
	return out
}

// viable type-checks the changed expression where the original stands.
func viable(fset *token.FileSet, pkg *types.Package, info *types.Info, n ast.Node, to token.Token) bool {
	var e ast.Expr
	switch n := n.(type) {
	case *ast.BinaryExpr:
		c := *n
		c.Op = to
		e = &c
	case *ast.UnaryExpr:
		c := *n
		c.Op = to
		e = &c
	default:
		return true // x++ and x-- apply to the same operands
	}
	scratch := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	if err := types.CheckExpr(fset, pkg, n.Pos(), e, scratch); err != nil {
		return false
	}
	tv := scratch.Types[e]
	// A constant that no longer fits its context's type does not compile.
	if orig := info.Types[n.(ast.Expr)]; tv.Value != nil && orig.Type != nil && !isUntyped(orig.Type) {
		if b, ok := orig.Type.Underlying().(*types.Basic); ok && !representable(tv, b) {
			return false
		}
	}
	return true
}

// representable: a constant value fits a basic integer type (floats and
// complex numbers round; anything else has no range).
func representable(tv types.TypeAndValue, b *types.Basic) bool {
	if b.Info()&types.IsInteger == 0 {
		return true
	}
	v := constant.ToInt(tv.Value)
	if v.Kind() != constant.Int {
		return false
	}
	bits := map[types.BasicKind]uint{types.Int8: 8, types.Int16: 16, types.Int32: 32, types.Int64: 64, types.Int: 64,
		types.Uint8: 8, types.Uint16: 16, types.Uint32: 32, types.Uint64: 64, types.Uint: 64, types.Uintptr: 64}[b.Kind()]
	if bits == 0 {
		return true
	}
	if b.Info()&types.IsUnsigned != 0 {
		return constant.Sign(v) >= 0 && constant.BitLen(v) <= int(bits)
	}
	lo := constant.Shift(constant.MakeInt64(-1), token.SHL, bits-1)
	hi := constant.BinaryOp(constant.UnaryOp(token.SUB, lo, 0), token.SUB, constant.MakeInt64(1))
	return constant.Compare(v, token.GEQ, lo) && constant.Compare(v, token.LEQ, hi)
}

func isUntyped(t types.Type) bool {
	b, ok := t.(*types.Basic)
	return ok && b.Info()&types.IsUntyped != 0
}

// switchable: the operator can become a call of a closure, which holds each
// mutation behind the switch. A constant declaration, an array length or an
// untyped result needs a constant; a type the closure cannot name is left to
// a build of its own.
func switchable(pkg *types.Package, info *types.Info, n ast.Node, stack []ast.Node) bool {
	for _, a := range stack {
		switch a := a.(type) {
		case *ast.GenDecl:
			if a.Tok == token.CONST {
				return false
			}
		case *ast.ArrayType:
			if a.Len != nil && contains(a.Len, n) {
				return false
			}
		}
	}
	switch n := n.(type) {
	case *ast.BinaryExpr:
		return typed(pkg, info, n) && operandNameable(pkg, info, n.X) && operandNameable(pkg, info, n.Y)
	case *ast.UnaryExpr:
		return typed(pkg, info, n) && operandNameable(pkg, info, n.X)
	}
	return true
}

func contains(outer, inner ast.Node) bool {
	return outer.Pos() <= inner.Pos() && inner.End() <= outer.End()
}

// typed: the expression's type is one the closure can return.
func typed(pkg *types.Package, info *types.Info, e ast.Expr) bool {
	tv, ok := info.Types[e]
	if !ok || tv.Type == nil {
		return false
	}
	if isUntyped(tv.Type) {
		// A comparison is a bool wherever it stands.
		return tv.Type.(*types.Basic).Kind() == types.UntypedBool
	}
	return nameable(pkg, tv.Type, map[types.Type]bool{})
}

// operandNameable: an operand becomes a parameter of its own type, unless it
// is untyped (a constant or nil), which the closure repeats as written.
func operandNameable(pkg *types.Package, info *types.Info, e ast.Expr) bool {
	tv, ok := info.Types[e]
	if !ok || tv.Type == nil {
		return false
	}
	if tv.IsNil() || isUntyped(tv.Type) {
		return true
	}
	return nameable(pkg, tv.Type, map[types.Type]bool{})
}

// nameable: a type this package can spell, importing what it needs.
func nameable(pkg *types.Package, t types.Type, seen map[types.Type]bool) bool {
	if seen[t] {
		return true
	}
	seen[t] = true
	switch t := t.(type) {
	case *types.Basic:
		return t.Kind() != types.Invalid && t.Info()&types.IsUntyped == 0
	case *types.Named:
		o := t.Obj()
		if o.Pkg() != nil && o.Pkg() != pkg && !o.Exported() {
			return false
		}
		if o.Parent() != nil && o.Pkg() == pkg && o.Parent() != pkg.Scope() {
			return true // a type declared in the function: in scope there
		}
		for i := range t.TypeArgs().Len() {
			if !nameable(pkg, t.TypeArgs().At(i), seen) {
				return false
			}
		}
		return true
	case *types.Alias:
		return nameable(pkg, types.Unalias(t), seen)
	case *types.TypeParam:
		return true
	case *types.Pointer:
		return nameable(pkg, t.Elem(), seen)
	case *types.Slice:
		return nameable(pkg, t.Elem(), seen)
	case *types.Array:
		return nameable(pkg, t.Elem(), seen)
	case *types.Map:
		return nameable(pkg, t.Key(), seen) && nameable(pkg, t.Elem(), seen)
	case *types.Chan:
		return nameable(pkg, t.Elem(), seen)
	case *types.Struct:
		for i := range t.NumFields() {
			f := t.Field(i)
			if (!f.Exported() && f.Pkg() != pkg) || !nameable(pkg, f.Type(), seen) {
				return false
			}
		}
		return true
	case *types.Signature:
		return t.TypeParams() == nil && tupleNameable(pkg, t.Params(), seen) && tupleNameable(pkg, t.Results(), seen)
	case *types.Interface:
		for i := range t.NumMethods() {
			m := t.Method(i)
			if (!m.Exported() && m.Pkg() != pkg) || !nameable(pkg, m.Type(), seen) {
				return false
			}
		}
		for i := range t.NumEmbeddeds() {
			if !nameable(pkg, t.EmbeddedType(i), seen) {
				return false
			}
		}
		return true
	}
	return false
}

func tupleNameable(pkg *types.Package, t *types.Tuple, seen map[types.Type]bool) bool {
	for i := range t.Len() {
		if !nameable(pkg, t.At(i).Type(), seen) {
			return false
		}
	}
	return true
}

// Schema rewrites one file: every switchable mutant's operator becomes a
// closure that applies the mutant when the switch holds its id. Without
// an active mutant, each closure computes what the operator did, with its
// operands evaluated once and in the same order.
func Schema(src []byte, fset *token.FileSet, pkg *types.Package, info *types.Info, file *ast.File, mutants []*Mutant) []byte {
	sites := map[ast.Node]*site{}
	var order []*site
	for _, m := range mutants {
		if m.Alone || m.Status != "" {
			continue
		}
		s := sites[m.node]
		if s == nil {
			s = &site{node: m.node}
			sites[m.node] = s
			order = append(order, s)
		}
		s.mutants = append(s.mutants, m)
	}
	base := fset.File(file.Pos()).Base()
	w := &writer{src: src, base: base, pkg: pkg, info: info, imports: map[string]string{}}
	slices.SortFunc(order, func(a, b *site) int {
		if a.node.Pos() != b.node.Pos() {
			return int(a.node.Pos() - b.node.Pos())
		}
		return int(b.node.End() - a.node.End()) // the outer first
	})
	w.sites = order
	body := w.text(0, len(src))
	if len(w.imports) == 0 {
		return []byte(body)
	}
	// The closures name types of other packages by aliases of their own,
	// which no local name shadows.
	var imp strings.Builder
	imp.WriteString("; import (")
	for _, path := range slices.Sorted(maps.Keys(w.imports)) {
		fmt.Fprintf(&imp, "%s %q; ", w.imports[path], path)
	}
	imp.WriteString(")")
	at := int(file.Name.End()) - base
	return []byte(body[:at] + imp.String() + body[at:])
}

type writer struct {
	src     []byte
	base    int
	pkg     *types.Package
	info    *types.Info
	sites   []*site
	imports map[string]string // path -> alias
}

func (w *writer) off(p token.Pos) int { return int(p) - w.base }

// text is src[start:end] with every site inside it rewritten; sites nested
// in a rewritten one are rewritten inside its operands.
func (w *writer) text(start, end int) string {
	var b strings.Builder
	at := start
	for _, s := range w.sites {
		so, eo := w.off(s.node.Pos()), w.off(s.node.End())
		if so < at || eo > end {
			continue // outside, or inside a site already written
		}
		b.Write(w.src[at:so])
		b.WriteString(w.site(s))
		at = eo
	}
	b.Write(w.src[at:end])
	return b.String()
}

func (w *writer) expr(e ast.Expr) string { return w.text(w.off(e.Pos()), w.off(e.End())) }

func (w *writer) typeString(t types.Type) string {
	if isUntyped(t) {
		return "bool" // only comparisons keep an untyped type here
	}
	return types.TypeString(t, func(p *types.Package) string {
		if p == w.pkg {
			return ""
		}
		alias, ok := w.imports[p.Path()]
		if !ok {
			alias = fmt.Sprintf("%s%d", importName, len(w.imports)+1)
			w.imports[p.Path()] = alias
		}
		return alias
	})
}

// operand is a closure parameter for a typed operand, or the operand as
// written (parenthesized) for an untyped one, which has no side effects.
func (w *writer) operand(e ast.Expr, name string, params *[]string, args *[]string) string {
	tv := w.info.Types[e]
	if tv.IsNil() || isUntyped(tv.Type) {
		return "(" + w.expr(e) + ")"
	}
	*params = append(*params, name+" "+w.typeString(tv.Type))
	*args = append(*args, w.expr(e))
	return name
}

func (w *writer) site(s *site) string {
	var cases strings.Builder
	switch n := s.node.(type) {
	case *ast.BinaryExpr:
		var params, args []string
		x := w.operand(n.X, paramX, &params, &args)
		y := w.operand(n.Y, paramY, &params, &args)
		for _, m := range s.mutants {
			fmt.Fprintf(&cases, "case %d: return %s %s %s; ", m.ID, x, m.To, y)
		}
		return fmt.Sprintf("func(%s) %s { switch %s { %s}; return %s %s %s }(%s)",
			strings.Join(params, ", "), w.typeString(w.info.Types[n].Type), switchVar, cases.String(), x, n.Op, y, strings.Join(args, ", "))
	case *ast.UnaryExpr:
		var params, args []string
		x := w.operand(n.X, paramX, &params, &args)
		for _, m := range s.mutants {
			fmt.Fprintf(&cases, "case %d: return %s%s; ", m.ID, m.To, x)
		}
		return fmt.Sprintf("func(%s) %s { switch %s { %s}; return %s%s }(%s)",
			strings.Join(params, ", "), w.typeString(w.info.Types[n].Type), switchVar, cases.String(), n.Op, x, strings.Join(args, ", "))
	case *ast.IncDecStmt:
		x := w.expr(n.X)
		for _, m := range s.mutants {
			fmt.Fprintf(&cases, "case %d: %s%s; ", m.ID, x, m.To)
		}
		return fmt.Sprintf("func() { switch %s { %sdefault: %s%s } }()", switchVar, cases.String(), x, n.Tok)
	}
	panic(fmt.Sprintf("no site at %T", s.node))
}

// SwitchFile declares the switch in the package: the test binary reads the
// active mutant from its environment once, before any test.
func SwitchFile(pkgName string) []byte {
	return fmt.Appendf(nil, `package %s

import (
	%sOS "os"
	%sStrconv "strconv"
)

var %s, _ = %sStrconv.Atoi(%sOS.Getenv(%q))
`, pkgName, importName, importName, switchVar, importName, importName, mutantEnv)
}

// Mutated is the file with one mutant's operator changed, as gremlins writes
// it: for a build of its own.
func Mutated(src []byte, fset *token.FileSet, m *Mutant) []byte {
	pos, _, _ := opPos(m.node)
	off := fset.Position(pos).Offset
	out := slices.Clone(src[:off])
	out = append(out, m.To.String()...)
	return append(out, src[off+len(m.From.String()):]...)
}

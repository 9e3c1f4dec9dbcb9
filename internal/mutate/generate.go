package mutate

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
)

// DefaultPackages are the reconciler's packages the mutants come from.
var DefaultPackages = []string{"./kmm/controller", "./kmm/detect", "./kmm/worker"}

// Set is a generation of mutants and the unmutated files they change.
type Set struct {
	// Dir is the module's root.
	Dir     string
	Mutants []Mutant
	// Module is the module's path; Packages the import paths of the
	// packages mutated.
	Module   string
	Packages []string
	// Sources are the unmutated files, by path in the module.
	Sources map[string][]byte

	// pkgOf is each file's package, for Check.
	pkgOf map[string]*pkgInfo
}

// pkgInfo is what type-checking a package again needs: its files and
// the packages it imports (as the first load type-checked them).
type pkgInfo struct {
	path    string
	files   []string // paths in the module
	imports map[string]*types.Package
}

// Generate makes the mutants of the packages (patterns of the go command,
// relative to dir, the module's root): test files and generated files are
// left out.
func Generate(dir string, patterns []string) (*Set, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	pkgs, err := loadPackages(abs, patterns)
	if err != nil {
		return nil, err
	}
	gomod, err := os.ReadFile(filepath.Join(abs, "go.mod"))
	if err != nil {
		return nil, err
	}
	set := &Set{Dir: abs, Module: modfile.ModulePath(gomod), Sources: map[string][]byte{}, pkgOf: map[string]*pkgInfo{}}
	for _, p := range pkgs {
		set.Packages = append(set.Packages, p.types.Path())
		pi := &pkgInfo{path: p.types.Path(), imports: map[string]*types.Package{}}
		for _, im := range p.types.Imports() {
			pi.imports[im.Path()] = im
		}
		for i, f := range p.files {
			rel := p.rel[i]
			if strings.HasSuffix(rel, "_test.go") || ast.IsGenerated(f) {
				continue
			}
			set.Sources[rel] = p.src[i]
			pi.files = append(pi.files, rel)
			set.pkgOf[rel] = pi
			g := &fileGen{fset: p.fset, info: p.info, pkg: p.types, file: f, src: p.src[i], rel: rel}
			g.imports()
			g.walk()
			set.Mutants = append(set.Mutants, g.out...)
		}
	}
	sort.SliceStable(set.Mutants, func(i, j int) bool {
		a, b := set.Mutants[i], set.Mutants[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.start != b.start {
			return a.start < b.start
		}
		return slices.Index(Operators, a.Operator) < slices.Index(Operators, b.Operator)
	})
	keys := map[string]int{}
	for i := range set.Mutants {
		m := &set.Mutants[i]
		m.ID = i + 1
		base := m.Key
		keys[base]++
		m.Key = fmt.Sprintf("%s#%d", base, keys[base])
	}
	return set, nil
}

// fileGen makes the mutants of one file.
type fileGen struct {
	fset *token.FileSet
	info *types.Info
	pkg  *types.Package
	file *ast.File
	src  []byte
	rel  string
	// names maps an imported package's path to its name in the file.
	names map[string]string
	out   []Mutant

	// The walk's state: the path from the declaration to the node being
	// visited, the function's name and signature, and why every change
	// in that function is unobservable ("" unless it is an EventFuncs).
	stack []ast.Node
	fn    string
	sig   *types.Signature
	fnWhy string
}

func (g *fileGen) imports() {
	g.names = map[string]string{}
	for _, im := range g.file.Imports {
		path := strings.Trim(im.Path.Value, `"`)
		if im.Name != nil {
			g.names[path] = im.Name.Name
			continue
		}
		if pn, ok := g.info.Implicits[im].(*types.PkgName); ok {
			g.names[path] = pn.Name()
		}
	}
}

// qualifier writes a type as the file names it.
func (g *fileGen) qualifier(p *types.Package) string {
	if p == g.pkg {
		return ""
	}
	if n, ok := g.names[p.Path()]; ok {
		return n
	}
	return p.Name()
}

func (g *fileGen) text(n ast.Node) string {
	return string(g.src[g.fset.Position(n.Pos()).Offset:g.fset.Position(n.End()).Offset])
}

func (g *fileGen) offset(p token.Pos) int { return g.fset.Position(p).Offset }

// add records a mutant replacing [from, to) with repl; site, when set,
// stands for the replaced text in the key (an insertion replaces none).
func (g *fileGen) add(op Operator, from, to token.Pos, repl, site, unobservable string) {
	start, end := g.offset(from), g.offset(to)
	orig := string(g.src[start:end])
	if orig == repl {
		return
	}
	pos := g.fset.Position(from)
	if site == "" {
		site = orig
	}
	if unobservable == "" {
		unobservable = g.fnWhy
	}
	g.out = append(g.out, Mutant{File: g.rel, Func: g.fn, Line: pos.Line, Column: pos.Column, Operator: op, Original: orig, Replacement: repl,
		Unobservable: unobservable, start: start, end: end,
		Key: fmt.Sprintf("%s|%s|%s|%s|%s", g.rel, g.fn, op, oneLine(site), oneLine(repl))})
}

// walk visits the file's declarations.
func (g *fileGen) walk() {
	for _, d := range g.file.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Body == nil {
				continue
			}
			g.fn = funcName(d)
			g.sig = nil
			if f, ok := g.info.Defs[d.Name].(*types.Func); ok {
				g.sig, _ = f.Type().(*types.Signature)
			}
			g.fnWhy = ""
			if slices.Contains(EventFuncs, g.fn) {
				g.fnWhy = WhyEvent
			}
			g.inspect(d.Body)
		case *ast.GenDecl:
			if d.Tok != token.CONST && d.Tok != token.VAR {
				continue
			}
			g.fn, g.sig, g.fnWhy = d.Tok.String(), nil, ""
			for _, s := range d.Specs {
				if vs, ok := s.(*ast.ValueSpec); ok {
					for _, v := range vs.Values {
						g.inspect(v)
					}
				}
			}
		}
	}
}

// funcName is "Name" or "(*Recv).Name".
func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	t := d.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = "*", s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return "(" + star + id.Name + ")." + d.Name.Name
	}
	return d.Name.Name
}

// inspect visits n's subtree, keeping the path from the declaration in
// g.stack.
func (g *fileGen) inspect(n ast.Node) {
	ast.Inspect(n, func(n ast.Node) bool {
		if n == nil {
			g.stack = g.stack[:len(g.stack)-1]
			return true
		}
		g.visit(n)
		g.stack = append(g.stack, n)
		return true
	})
}

// visit makes the mutants of one node; g.stack holds its ancestors.
func (g *fileGen) visit(n ast.Node) {
	switch n := n.(type) {
	case *ast.BinaryExpr:
		g.binary(n)
	case *ast.UnaryExpr:
		if n.Op == token.NOT && g.isConditionRoot(n) {
			g.condition(n)
		}
	case *ast.IfStmt:
		g.conditionRoot(n.Cond, false)
	case *ast.ForStmt:
		if n.Cond != nil {
			g.conditionRoot(n.Cond, true)
		}
		g.loop(n, n.Body)
	case *ast.RangeStmt:
		g.loop(n, n.Body)
	case *ast.SwitchStmt:
		if n.Tag == nil {
			for _, c := range n.Body.List {
				for _, e := range c.(*ast.CaseClause).List {
					g.conditionRoot(e, false)
				}
			}
		}
	case *ast.BlockStmt:
		g.statements(n.List, n)
	case *ast.CaseClause:
		g.statements(n.Body, n)
	case *ast.CommClause:
		g.statements(n.Body, n)
	case *ast.IncDecStmt:
		flip := map[token.Token]string{token.INC: "--", token.DEC: "++"}
		g.add(OpArithmetic, n.TokPos, n.TokPos+2, flip[n.Tok], "", g.messageContext(n))
	case *ast.AssignStmt:
		flip := map[token.Token]string{token.ADD_ASSIGN: "-=", token.SUB_ASSIGN: "+=", token.MUL_ASSIGN: "/=", token.QUO_ASSIGN: "*="}
		if r, ok := flip[n.Tok]; ok && g.numeric(n.Lhs[0]) {
			g.add(OpArithmetic, n.TokPos, n.TokPos+token.Pos(len(n.Tok.String())), r, "", g.messageContext(n))
		}
	case *ast.BranchStmt:
		g.branch(n)
	case *ast.BasicLit:
		g.constant(n)
	case *ast.Ident:
		if obj, ok := g.info.Uses[n].(*types.Const); ok && obj.Parent() == types.Universe && (n.Name == "true" || n.Name == "false") {
			g.add(OpConstant, n.Pos(), n.End(), map[string]string{"true": "false", "false": "true"}[n.Name], "", g.messageContext(n))
		}
	case *ast.CallExpr:
		g.swapArgs(n)
	}
}

var (
	negation = map[token.Token]token.Token{token.EQL: token.NEQ, token.NEQ: token.EQL, token.LSS: token.GEQ, token.LEQ: token.GTR,
		token.GTR: token.LEQ, token.GEQ: token.LSS}
	boundary   = map[token.Token]token.Token{token.LSS: token.LEQ, token.LEQ: token.LSS, token.GTR: token.GEQ, token.GEQ: token.GTR}
	arithmetic = map[token.Token]token.Token{token.ADD: token.SUB, token.SUB: token.ADD, token.MUL: token.QUO, token.QUO: token.MUL, token.REM: token.MUL}
)

func (g *fileGen) binary(n *ast.BinaryExpr) {
	why := g.messageContext(n)
	opEnd := n.OpPos + token.Pos(len(n.Op.String()))
	switch {
	case negation[n.Op] != 0:
		g.add(OpNegate, n.OpPos, opEnd, negation[n.Op].String(), "", why)
		if b, ok := boundary[n.Op]; ok && g.ordered(n.X) {
			g.add(OpBoundary, n.OpPos, opEnd, b.String(), "", why)
		}
		if !g.inLoopCondition(n) {
			g.add(OpTrue, n.Pos(), n.End(), "true", "", why)
		}
		g.add(OpFalse, n.Pos(), n.End(), "false", "", why)
	case n.Op == token.LAND || n.Op == token.LOR:
		r := map[token.Token]string{token.LAND: "||", token.LOR: "&&"}[n.Op]
		g.add(OpLogical, n.OpPos, opEnd, r, "", why)
		for _, x := range []ast.Expr{n.X, n.Y} {
			if leaf := ast.Unparen(x); !isRelationalOrLogical(leaf) {
				if _, not := leaf.(*ast.UnaryExpr); !not || leaf.(*ast.UnaryExpr).Op != token.NOT {
					g.condition(leaf)
				}
			}
		}
	case arithmetic[n.Op] != 0 && g.numeric(n):
		g.add(OpArithmetic, n.OpPos, opEnd, arithmetic[n.Op].String(), "", why)
	}
}

func isRelationalOrLogical(e ast.Expr) bool {
	b, ok := e.(*ast.BinaryExpr)
	return ok && (negation[b.Op] != 0 || b.Op == token.LAND || b.Op == token.LOR)
}

// conditionRoot mutates the condition of an if, for or case when it is a
// leaf (not a comparison or a && / ||, which binary mutates).
func (g *fileGen) conditionRoot(e ast.Expr, loop bool) {
	leaf := ast.Unparen(e)
	if isRelationalOrLogical(leaf) {
		return
	}
	if u, ok := leaf.(*ast.UnaryExpr); ok && u.Op == token.NOT {
		return // visited as a UnaryExpr
	}
	g.conditionLeaf(leaf, loop)
}

// isConditionRoot reports whether a ! expression is a condition the
// walk mutates as a whole: an if's, a for's or a case's condition, or an
// operand of && or ||.
func (g *fileGen) isConditionRoot(n ast.Expr) bool {
	for i := len(g.stack) - 1; i >= 0; i-- {
		switch p := g.stack[i].(type) {
		case *ast.ParenExpr:
			continue
		case *ast.IfStmt:
			return ast.Unparen(p.Cond) == n
		case *ast.ForStmt:
			return p.Cond != nil && ast.Unparen(p.Cond) == n
		case *ast.CaseClause:
			return slices.ContainsFunc(p.List, func(e ast.Expr) bool { return ast.Unparen(e) == n })
		case *ast.BinaryExpr:
			return p.Op == token.LAND || p.Op == token.LOR
		default:
			return false
		}
	}
	return false
}

// condition mutates a leaf condition: negated, true, false.
func (g *fileGen) condition(e ast.Expr) { g.conditionLeaf(e, g.inLoopCondition(e)) }

func (g *fileGen) conditionLeaf(e ast.Expr, loop bool) {
	why := g.messageContext(e)
	neg := "!" + g.text(e)
	switch x := e.(type) {
	case *ast.UnaryExpr:
		if x.Op == token.NOT {
			neg = g.text(x.X)
		}
	case *ast.Ident, *ast.CallExpr, *ast.SelectorExpr, *ast.IndexExpr, *ast.ParenExpr:
	default:
		neg = "!(" + g.text(e) + ")"
	}
	g.add(OpNegate, e.Pos(), e.End(), neg, "", why)
	if !loop {
		g.add(OpTrue, e.Pos(), e.End(), "true", "", why)
	}
	g.add(OpFalse, e.Pos(), e.End(), "false", "", why)
}

// inLoopCondition reports whether the node being visited is part of a for
// statement's condition (true there would loop for ever, burning a core
// the other cases need).
func (g *fileGen) inLoopCondition(n ast.Node) bool {
	child := n
	for i := len(g.stack) - 1; i >= 0; i-- {
		switch p := g.stack[i].(type) {
		case *ast.ForStmt:
			return p.Cond != nil && child == p.Cond
		case ast.Stmt:
			return false
		}
		child = g.stack[i]
	}
	return false
}

func (g *fileGen) numeric(e ast.Expr) bool {
	t, ok := g.info.TypeOf(e).Underlying().(*types.Basic)
	return ok && t.Info()&types.IsNumeric != 0
}

func (g *fileGen) ordered(e ast.Expr) bool {
	t, ok := g.info.TypeOf(e).Underlying().(*types.Basic)
	return ok && t.Info()&types.IsOrdered != 0 && t.Info()&types.IsString == 0
}

// CompileError is a mutant the type checker refuses: it does not
// compile.
type CompileError struct {
	Mutant int
	Errs   []error
}

func (e *CompileError) Error() string {
	msgs := make([]string, 0, len(e.Errs))
	for _, err := range e.Errs {
		msgs = append(msgs, err.Error())
	}
	return fmt.Sprintf("mutant %d does not compile: %s", e.Mutant, strings.Join(msgs, "; "))
}

// Mutated returns the mutant's file as it changes it.
func (s *Set) Mutated(m Mutant) ([]byte, error) {
	src, ok := s.Sources[m.File]
	if !ok {
		return nil, fmt.Errorf("mutant %d: no file %s in the set", m.ID, m.File)
	}
	return m.Apply(src)
}

// Check type-checks the mutant's package with the mutant applied, as the
// compiler would: a *CompileError when it refuses it.
func (s *Set) Check(m Mutant) error {
	pi, ok := s.pkgOf[m.File]
	if !ok {
		return fmt.Errorf("mutant %d: no package for %s", m.ID, m.File)
	}
	mutated, err := s.Mutated(m)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, rel := range pi.files {
		src := s.Sources[rel]
		if rel == m.File {
			src = mutated
		}
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			return &CompileError{Mutant: m.ID, Errs: []error{err}}
		}
		files = append(files, f)
	}
	var errs []error
	conf := types.Config{Importer: importerFunc(func(path string) (*types.Package, error) {
		if p, ok := pi.imports[path]; ok {
			return p, nil
		}
		return nil, fmt.Errorf("package %s imports %s, which it did not import before the mutant", pi.path, path)
	}), Error: func(err error) { errs = append(errs, err) }}
	if _, err := conf.Check(pi.path, fset, files, nil); err != nil && len(errs) == 0 {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return &CompileError{Mutant: m.ID, Errs: errs}
	}
	return nil
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

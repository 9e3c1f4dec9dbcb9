package mutate

import (
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"strings"
)

// Why a mutant cannot change what the harness observes (Mutant.Unobservable).
const (
	WhyLog     = "only a log line changes (logs are for people; the harness judges kernels, worker pods and NodeModulesConfig status)"
	WhyEvent   = "only a Kubernetes Event changes (Events are for people; the harness judges kernels, worker pods and NodeModulesConfig status)"
	WhyMessage = "only the text of a message changes (an error's or a reason's words, read by people, never by the reconciler's decisions)"
)

// EventFuncs are the reconciler's own functions that only emit Events
// (their calls are unobservable like the recorder's).
var EventFuncs = []string{"(*pending).emit", "(*Reconciler).event"}

// statements mutates the statements of a block or clause: each one that
// does something on its own is removed (a return only where it is not the
// function's last statement).
func (g *fileGen) statements(list []ast.Stmt, parent ast.Node) {
	funcBody := false
	if len(g.stack) == 0 {
		funcBody = true // the walk starts at a function's body
	} else if _, ok := g.stack[len(g.stack)-1].(*ast.FuncLit); ok {
		funcBody = true
	}
	for i, s := range list {
		why := ""
		switch s := s.(type) {
		case *ast.ExprStmt:
			if c, ok := s.X.(*ast.CallExpr); ok {
				why = g.messageCall(c)
			}
		case *ast.AssignStmt:
			if s.Tok == token.DEFINE {
				continue
			}
		case *ast.IncDecStmt, *ast.SendStmt, *ast.DeferStmt, *ast.GoStmt:
		case *ast.BranchStmt:
			if s.Tok != token.BREAK && s.Tok != token.CONTINUE {
				continue
			}
		case *ast.ReturnStmt:
			if funcBody && i == len(list)-1 {
				continue
			}
		default:
			continue
		}
		if why == "" {
			why = g.messageContext(parent)
		}
		g.add(OpRemove, s.Pos(), s.End(), "", "", why)
	}
}

// loop inserts break at the start and the end of a loop's body, and a
// return at its start.
func (g *fileGen) loop(stmt ast.Stmt, body *ast.BlockStmt) {
	header := strings.TrimSpace(string(g.src[g.offset(stmt.Pos()):g.offset(body.Lbrace)]))
	why := g.messageContext(body)
	g.add(OpInsertBreak, body.Lbrace+1, body.Lbrace+1, " break; ", "at the start of: "+header, why)
	if len(body.List) > 0 {
		g.add(OpInsertBreak, body.Rbrace, body.Rbrace, "break\n", "at the end of: "+header, why)
	}
	if ret, ok := g.zeroReturn(); ok {
		g.add(OpInsertReturn, body.Lbrace+1, body.Lbrace+1, " "+ret+"; ", "at the start of: "+header, why)
	}
}

// zeroReturn is a return statement of zero values for the innermost
// function being walked, or a bare return where its results are named
// or absent.
func (g *fileGen) zeroReturn() (string, bool) {
	sig := g.sig
	for i := len(g.stack) - 1; i >= 0; i-- {
		if fl, ok := g.stack[i].(*ast.FuncLit); ok {
			sig, _ = g.info.TypeOf(fl).(*types.Signature)
			break
		}
	}
	if sig == nil {
		return "", false
	}
	res := sig.Results()
	if res.Len() == 0 || res.At(0).Name() != "" {
		return "return", true
	}
	var vals []string
	for v := range res.Variables() {
		z, ok := g.zero(v.Type())
		if !ok {
			return "", false
		}
		vals = append(vals, z)
	}
	return "return " + strings.Join(vals, ", "), true
}

// zero is the zero value of t as the file writes it.
func (g *fileGen) zero(t types.Type) (string, bool) {
	switch u := t.Underlying().(type) {
	case *types.Basic:
		switch {
		case u.Info()&types.IsBoolean != 0:
			return "false", true
		case u.Info()&types.IsNumeric != 0:
			return "0", true
		case u.Info()&types.IsString != 0:
			return `""`, true
		}
		return "", false
	case *types.Pointer, *types.Slice, *types.Map, *types.Chan, *types.Signature, *types.Interface:
		return "nil", true
	case *types.Struct, *types.Array:
		return types.TypeString(t, g.qualifier) + "{}", true
	}
	return "", false
}

// branch swaps break and continue inside a loop.
func (g *fileGen) branch(n *ast.BranchStmt) {
	if n.Label != nil || (n.Tok != token.BREAK && n.Tok != token.CONTINUE) || !g.inLoop() {
		return
	}
	r := map[token.Token]string{token.BREAK: "continue", token.CONTINUE: "break"}[n.Tok]
	g.add(OpLoopControl, n.Pos(), n.End(), r, "", g.messageContext(n))
}

// inLoop reports whether the node being visited is in a loop of the
// function being walked.
func (g *fileGen) inLoop() bool {
	for i := len(g.stack) - 1; i >= 0; i-- {
		switch g.stack[i].(type) {
		case *ast.ForStmt, *ast.RangeStmt:
			return true
		case *ast.FuncLit:
			return false
		}
	}
	return false
}

// constant changes a number n to n+1 and, unless it is 0, to 0.
func (g *fileGen) constant(n *ast.BasicLit) {
	if n.Kind != token.INT && n.Kind != token.FLOAT {
		return
	}
	why := g.messageContext(n)
	lit := strings.ReplaceAll(n.Value, "_", "")
	if n.Kind == token.INT {
		v, err := strconv.ParseInt(lit, 0, 64)
		if err != nil {
			return
		}
		g.add(OpConstant, n.Pos(), n.End(), strconv.FormatInt(v+1, 10), "", why)
		if v != 0 {
			g.add(OpConstant, n.Pos(), n.End(), "0", "", why)
		}
		return
	}
	v, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return
	}
	g.add(OpConstant, n.Pos(), n.End(), strconv.FormatFloat(v+1, 'g', -1, 64), "", why)
	if v != 0 {
		g.add(OpConstant, n.Pos(), n.End(), "0", "", why)
	}
}

// swapArgs swaps neighbouring arguments of identical types.
func (g *fileGen) swapArgs(c *ast.CallExpr) {
	msg := g.messageCall(c)
	if msg == "" {
		msg = g.messageContext(c)
	}
	for i := 0; i+1 < len(c.Args); i++ {
		a, b := c.Args[i], c.Args[i+1]
		if c.Ellipsis.IsValid() && i+1 == len(c.Args)-1 {
			break
		}
		ta, tb := g.info.TypeOf(a), g.info.TypeOf(b)
		if ta == nil || tb == nil || !types.Identical(ta, tb) || g.text(a) == g.text(b) {
			continue
		}
		if bt, ok := ta.(*types.Basic); ok && bt.Kind() == types.UntypedNil {
			continue
		}
		why := msg
		if isError(ta) {
			why = ""
		}
		sep := string(g.src[g.offset(a.End()):g.offset(b.Pos())])
		g.add(OpSwapArgs, a.Pos(), b.End(), g.text(b)+sep+g.text(a), "", why)
	}
}

var errorType = types.Universe.Lookup("error").Type()

func isError(t types.Type) bool {
	return types.Implements(t, errorType.Underlying().(*types.Interface))
}

// messageCall says what c only makes: a log line, an Event or a
// message's text ("" when it may do more).
func (g *fileGen) messageCall(c *ast.CallExpr) string {
	sel, ok := ast.Unparen(c.Fun).(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	fn, ok := g.info.Uses[sel.Sel].(*types.Func)
	if !ok || fn.Pkg() == nil {
		return ""
	}
	sig, _ := fn.Type().(*types.Signature)
	if sig != nil && sig.Recv() != nil {
		recv := sig.Recv().Type()
		if p, ok := recv.(*types.Pointer); ok {
			recv = p.Elem()
		}
		if named, ok := recv.(*types.Named); ok {
			obj := named.Obj()
			switch {
			case obj.Pkg() != nil && obj.Pkg().Path() == "github.com/go-logr/logr" && obj.Name() == "Logger":
				return WhyLog
			case obj.Pkg() != nil && obj.Pkg().Path() == "k8s.io/client-go/tools/events":
				return WhyEvent
			case obj.Pkg() == g.pkg:
				name := "(" + obj.Name() + ")." + fn.Name()
				if _, ptr := sig.Recv().Type().(*types.Pointer); ptr {
					name = "(*" + obj.Name() + ")." + fn.Name()
				}
				for _, e := range EventFuncs {
					if e == name {
						return WhyEvent
					}
				}
			}
		}
		return ""
	}
	switch fn.Pkg().Path() + "." + fn.Name() {
	case "fmt.Sprintf", "fmt.Sprint", "fmt.Sprintln", "fmt.Errorf", "errors.New":
		return WhyMessage
	}
	return ""
}

// messageContext says why the node being visited (n, below g.stack) can
// only change a message: it lies in an argument (or the callee) of a
// message call, and not in an argument of type error (which a message may
// wrap, and errors.Is see).
func (g *fileGen) messageContext(n ast.Node) string {
	child := n
	for i := len(g.stack) - 1; i >= 0; i-- {
		if c, ok := g.stack[i].(*ast.CallExpr); ok {
			if why := g.messageCall(c); why != "" {
				if e, ok := child.(ast.Expr); ok && child != c.Fun {
					if t := g.info.TypeOf(e); t != nil && isError(t) {
						return ""
					}
				}
				return why
			}
		}
		child = g.stack[i]
	}
	return ""
}

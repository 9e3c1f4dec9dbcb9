// Package workflowcheck says what bootproof's GitHub Actions workflows do
// on each event: it evaluates their expressions (${{ }}) as GitHub does,
// so that a test can say which jobs run, on which runners, with which
// environment, and which steps publish what.
//
// Expressions are parsed by actionlint's parser (github.com/rhysd/actionlint,
// the version 'make verify' runs over the workflows); this package
// evaluates the syntax tree with GitHub's semantics:
//
//   - values are null (nil), booleans, numbers (float64), strings, objects
//     (map[string]any; property names are case-insensitive) and arrays
//     ([]any);
//   - false, 0, -0, "", null and NaN are falsy; && and || return one of
//     their operands (a && b is a when a is falsy, else b), so an empty
//     string in the middle of x && "" || "y" gives "y" whatever x is;
//   - comparisons are loose: operands of different types are converted to
//     numbers (null 0, true 1, false 0, a string parsed as a number with ""
//     0 and anything else NaN, objects and arrays NaN); NaN compares false;
//     strings compare case-insensitively; objects and arrays are equal only
//     to themselves;
//   - the functions are contains, startsWith, endsWith, format, join,
//     toJSON, fromJSON, hashFiles and the status functions success,
//     always, failure and cancelled; an if without a status function has
//     an implied success() &&.
package workflowcheck

import (
	"fmt"
	"math"
	"strings"

	"github.com/rhysd/actionlint"
)

// Job statuses, for the status functions.
const (
	StatusSuccess   = "success"
	StatusFailure   = "failure"
	StatusCancelled = "cancelled"
)

// Context is what an expression reads: the contexts it may use, by name
// (github, inputs, env, steps, ...; a name missing here is an error, as
// GitHub refuses a context where it is not available), and the status so
// far of the job (or composite action) for the status functions.
type Context struct {
	Values map[string]any
	// Status is StatusSuccess (also when empty), StatusFailure or
	// StatusCancelled.
	Status string
}

// filtered is the result of an object filter (a.*): a following property
// access applies to each element.
type filtered []any

// Eval evaluates one expression (what is between ${{ and }}).
func Eval(src string, c *Context) (any, error) {
	n, err := parseExpr(src)
	if err != nil {
		return nil, err
	}
	v, err := c.eval(n)
	if err != nil {
		return nil, fmt.Errorf("${{ %s }}: %w", strings.TrimSpace(src), err)
	}
	return plain(v), nil
}

func parseExpr(src string) (actionlint.ExprNode, error) {
	n, err := actionlint.NewExprParser().Parse(actionlint.NewExprLexer(src + "}}"))
	if err != nil {
		return nil, fmt.Errorf("${{ %s }}: %s", strings.TrimSpace(src), err.Message)
	}
	return n, nil
}

// singleExpr returns the expression of a value that is one ${{ }} alone.
func singleExpr(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "${{") || !strings.HasSuffix(t, "}}") || strings.Count(t, "${{") != 1 {
		return "", false
	}
	return t[3 : len(t)-2], true
}

// Interpolate evaluates a workflow value that may hold ${{ }}: a value
// that is one expression alone has the expression's value and type (a
// runs-on of fromJSON(...) is an array); any other value is a string with
// each expression's value written into it (null as "").
func Interpolate(s string, c *Context) (any, error) {
	if e, ok := singleExpr(s); ok {
		return Eval(e, c)
	}
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, "${{")
		if i < 0 {
			b.WriteString(rest)
			return b.String(), nil
		}
		b.WriteString(rest[:i])
		l := actionlint.NewExprLexer(rest[i+3:])
		n, perr := actionlint.NewExprParser().Parse(l)
		if perr != nil {
			return nil, fmt.Errorf("%q: %s", s, perr.Message)
		}
		v, err := c.eval(n)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		b.WriteString(ToString(plain(v)))
		rest = rest[i+3+l.Offset():]
	}
}

// InterpolateString is Interpolate as a string, as GitHub writes an env
// or with value.
func InterpolateString(s string, c *Context) (string, error) {
	v, err := Interpolate(s, c)
	if err != nil {
		return "", err
	}
	return ToString(v), nil
}

// Condition evaluates an if: with or without ${{ }} around it, with the
// implied success() && unless the condition calls a status function. An
// empty condition is success().
func Condition(s string, c *Context) (bool, error) {
	src := strings.TrimSpace(s)
	if e, ok := singleExpr(src); ok {
		src = e
	} else if strings.Contains(src, "${{") {
		// Text around an expression: a string, true unless empty.
		v, err := Interpolate(src, c)
		if err != nil {
			return false, err
		}
		return c.status() == StatusSuccess && Truthy(v), nil
	}
	if src == "" {
		src = "success()"
	}
	n, err := parseExpr(src)
	if err != nil {
		return false, err
	}
	if !callsStatus(n) && c.status() != StatusSuccess {
		return false, nil
	}
	v, err := c.eval(n)
	if err != nil {
		return false, fmt.Errorf("if: %s: %w", src, err)
	}
	return Truthy(v), nil
}

var statusFuncs = map[string]bool{"success": true, "always": true, "failure": true, "cancelled": true}

func callsStatus(n actionlint.ExprNode) bool {
	found := false
	actionlint.VisitExprNode(n, func(n, _ actionlint.ExprNode, entering bool) {
		if f, ok := n.(*actionlint.FuncCallNode); ok && entering && statusFuncs[strings.ToLower(f.Callee)] {
			found = true
		}
	})
	return found
}

func (c *Context) status() string {
	if c.Status == "" {
		return StatusSuccess
	}
	return c.Status
}

func (c *Context) eval(n actionlint.ExprNode) (any, error) {
	switch n := n.(type) {
	case *actionlint.VariableNode:
		v, ok := lookup(c.Values, n.Name)
		if !ok {
			return nil, fmt.Errorf("context %q is not available here", n.Name)
		}
		return v, nil
	case *actionlint.NullNode:
		return nil, nil
	case *actionlint.BoolNode:
		return n.Value, nil
	case *actionlint.IntNode:
		return float64(n.Value), nil
	case *actionlint.FloatNode:
		return n.Value, nil
	case *actionlint.StringNode:
		return n.Value, nil
	case *actionlint.ObjectDerefNode:
		r, err := c.eval(n.Receiver)
		if err != nil {
			return nil, err
		}
		return property(r, n.Property), nil
	case *actionlint.ArrayDerefNode:
		r, err := c.eval(n.Receiver)
		if err != nil {
			return nil, err
		}
		return filter(r), nil
	case *actionlint.IndexAccessNode:
		return c.index(n)
	case *actionlint.NotOpNode:
		v, err := c.eval(n.Operand)
		if err != nil {
			return nil, err
		}
		return !Truthy(v), nil
	case *actionlint.CompareOpNode:
		l, err := c.eval(n.Left)
		if err != nil {
			return nil, err
		}
		r, err := c.eval(n.Right)
		if err != nil {
			return nil, err
		}
		return compare(n.Kind, plain(l), plain(r)), nil
	case *actionlint.LogicalOpNode:
		l, err := c.eval(n.Left)
		if err != nil {
			return nil, err
		}
		// The operand decides, and is the value: no conversion to boolean.
		if (n.Kind == actionlint.LogicalOpNodeKindAnd) != Truthy(l) {
			return l, nil
		}
		return c.eval(n.Right)
	case *actionlint.FuncCallNode:
		return c.call(n)
	}
	return nil, fmt.Errorf("unsupported expression node %T", n)
}

// lookup reads a property of an object, case-insensitively.
func lookup(m map[string]any, name string) (any, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

func property(r any, name string) any {
	switch r := r.(type) {
	case map[string]any:
		v, _ := lookup(r, name)
		return v
	case filtered:
		var out filtered
		for _, e := range r {
			if m, ok := e.(map[string]any); ok {
				if v, ok := lookup(m, name); ok {
					out = append(out, v)
				}
			}
		}
		return out
	}
	return nil
}

func filter(r any) any {
	switch r := r.(type) {
	case []any:
		return filtered(append([]any{}, r...))
	case map[string]any:
		var out filtered
		for _, v := range r {
			out = append(out, v)
		}
		return out
	case filtered:
		var out filtered
		for _, e := range r {
			if a, ok := e.([]any); ok {
				out = append(out, a...)
			}
		}
		return out
	}
	return filtered{}
}

func (c *Context) index(n *actionlint.IndexAccessNode) (any, error) {
	r, err := c.eval(n.Operand)
	if err != nil {
		return nil, err
	}
	i, err := c.eval(n.Index)
	if err != nil {
		return nil, err
	}
	switch r := plain(r).(type) {
	case map[string]any:
		k, ok := i.(string)
		if !ok {
			return nil, nil
		}
		v, _ := lookup(r, k)
		return v, nil
	case []any:
		f := ToNumber(i)
		if math.IsNaN(f) || f < 0 || int(f) >= len(r) {
			return nil, nil
		}
		return r[int(f)], nil
	}
	return nil, nil
}

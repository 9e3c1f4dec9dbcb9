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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
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

// plain turns a filter's result into an array.
func plain(v any) any {
	if f, ok := v.(filtered); ok {
		return []any(f)
	}
	return v
}

// Truthy is GitHub's conversion to boolean: false, 0, -0, "", null and
// NaN are false; everything else (objects and arrays too) is true.
func Truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0 && !math.IsNaN(v)
	case string:
		return v != ""
	}
	return true
}

var jsonNumber = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$`)

// ToNumber is GitHub's conversion to number: null 0, true 1, false 0, a
// string parsed as a number ("" and white space 0, 0x hexadecimal, 0o
// octal, anything else NaN), objects and arrays NaN.
func ToNumber(v any) float64 {
	switch v := v.(type) {
	case nil:
		return 0
	case bool:
		if v {
			return 1
		}
		return 0
	case float64:
		return v
	case string:
		s := strings.TrimSpace(v)
		switch {
		case s == "":
			return 0
		case strings.HasPrefix(s, "0x"):
			if i, err := strconv.ParseInt(s[2:], 16, 64); err == nil {
				return float64(i)
			}
		case strings.HasPrefix(s, "0o"):
			if i, err := strconv.ParseInt(s[2:], 8, 64); err == nil {
				return float64(i)
			}
		case jsonNumber.MatchString(s):
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				return f
			}
		}
	}
	return math.NaN()
}

// ToString is how GitHub writes a value into a string: null as "",
// booleans as true and false, whole numbers without a decimal point,
// objects and arrays as JSON.
func ToString(v any) string {
	switch v := plain(v).(type) {
	case nil:
		return ""
	case bool:
		return strconv.FormatBool(v)
	case float64:
		switch {
		case math.IsNaN(v):
			return "NaN"
		case math.IsInf(v, 1):
			return "Infinity"
		case math.IsInf(v, -1):
			return "-Infinity"
		case v == math.Trunc(v) && math.Abs(v) < 1e15:
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
		return strconv.FormatFloat(v, 'G', 15, 64)
	case string:
		return v
	}
	b, _ := json.MarshalIndent(plain(v), "", "  ")
	return string(b)
}

// kind orders the types for comparisons.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// equal is GitHub's loose ==.
func equal(a, b any) bool {
	ka, kb := kind(a), kind(b)
	if ka != kb {
		if ka == "array" || ka == "object" || kb == "array" || kb == "object" {
			return false
		}
		return ToNumber(a) == ToNumber(b)
	}
	switch ka {
	case "null":
		return true
	case "boolean":
		return a.(bool) == b.(bool)
	case "number":
		return a.(float64) == b.(float64)
	case "string":
		return strings.EqualFold(a.(string), b.(string))
	}
	// The same instance only (empty arrays share no storage to tell).
	if x, ok := a.([]any); ok {
		y := b.([]any)
		return len(x) > 0 && len(x) == len(y) && &x[0] == &y[0]
	}
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func compare(op actionlint.CompareOpNodeKind, a, b any) bool {
	switch op {
	case actionlint.CompareOpNodeKindEq:
		return equal(a, b)
	case actionlint.CompareOpNodeKindNotEq:
		return !equal(a, b)
	}
	var cmp int
	if sa, ok := a.(string); ok {
		if sb, ok := b.(string); ok {
			cmp = strings.Compare(strings.ToUpper(sa), strings.ToUpper(sb))
			return order(op, cmp)
		}
	}
	x, y := ToNumber(a), ToNumber(b)
	if math.IsNaN(x) || math.IsNaN(y) {
		return false
	}
	switch {
	case x < y:
		cmp = -1
	case x > y:
		cmp = 1
	}
	return order(op, cmp)
}

func order(op actionlint.CompareOpNodeKind, cmp int) bool {
	switch op {
	case actionlint.CompareOpNodeKindLess:
		return cmp < 0
	case actionlint.CompareOpNodeKindLessEq:
		return cmp <= 0
	case actionlint.CompareOpNodeKindGreater:
		return cmp > 0
	case actionlint.CompareOpNodeKindGreaterEq:
		return cmp >= 0
	}
	return false
}

func (c *Context) call(n *actionlint.FuncCallNode) (any, error) {
	args := make([]any, len(n.Args))
	for i, a := range n.Args {
		v, err := c.eval(a)
		if err != nil {
			return nil, err
		}
		args[i] = plain(v)
	}
	name := strings.ToLower(n.Callee)
	arity := map[string][2]int{"success": {0, 0}, "always": {0, 0}, "failure": {0, 0}, "cancelled": {0, 0},
		"contains": {2, 2}, "startswith": {2, 2}, "endswith": {2, 2}, "format": {1, -1}, "join": {1, 2},
		"tojson": {1, 1}, "fromjson": {1, 1}, "hashfiles": {1, -1}}
	a, ok := arity[name]
	if !ok {
		return nil, fmt.Errorf("unknown function %s", n.Callee)
	}
	if len(args) < a[0] || (a[1] >= 0 && len(args) > a[1]) {
		return nil, fmt.Errorf("%s: %d arguments", n.Callee, len(args))
	}
	switch name {
	case "success":
		return c.status() == StatusSuccess, nil
	case "always":
		return true, nil
	case "failure":
		return c.status() == StatusFailure, nil
	case "cancelled":
		return c.status() == StatusCancelled, nil
	case "contains":
		if arr, ok := args[0].([]any); ok {
			for _, e := range arr {
				if equal(e, args[1]) {
					return true, nil
				}
			}
			return false, nil
		}
		return strings.Contains(strings.ToUpper(ToString(args[0])), strings.ToUpper(ToString(args[1]))), nil
	case "startswith":
		return strings.HasPrefix(strings.ToUpper(ToString(args[0])), strings.ToUpper(ToString(args[1]))), nil
	case "endswith":
		return strings.HasSuffix(strings.ToUpper(ToString(args[0])), strings.ToUpper(ToString(args[1]))), nil
	case "format":
		return format(ToString(args[0]), args[1:])
	case "join":
		sep := ","
		if len(args) == 2 {
			sep = ToString(args[1])
		}
		arr, ok := args[0].([]any)
		if !ok {
			return ToString(args[0]), nil
		}
		parts := make([]string, len(arr))
		for i, e := range arr {
			parts[i] = ToString(e)
		}
		return strings.Join(parts, sep), nil
	case "tojson":
		b, err := json.MarshalIndent(args[0], "", "  ")
		return string(b), err
	case "fromjson":
		var v any
		if err := json.Unmarshal([]byte(ToString(args[0])), &v); err != nil {
			return nil, fmt.Errorf("fromJSON(%q): %w", ToString(args[0]), err)
		}
		return v, nil
	case "hashfiles":
		// A stand-in: the files are not hashed here.
		parts := make([]string, len(args))
		for i, a := range args {
			parts[i] = ToString(a)
		}
		sum := sha256.Sum256([]byte(strings.Join(parts, "\n")))
		return hex.EncodeToString(sum[:]), nil
	}
	return nil, fmt.Errorf("unknown function %s", n.Callee)
}

// format is GitHub's format(): {N} is the Nth argument, {{ and }} are
// braces.
func format(f string, args []any) (string, error) {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		switch {
		case strings.HasPrefix(f[i:], "{{"):
			b.WriteByte('{')
			i++
		case strings.HasPrefix(f[i:], "}}"):
			b.WriteByte('}')
			i++
		case f[i] == '{':
			j := strings.IndexByte(f[i:], '}')
			if j < 0 {
				return "", fmt.Errorf("format(%q): unclosed {", f)
			}
			n, err := strconv.Atoi(f[i+1 : i+j])
			if err != nil || n < 0 || n >= len(args) {
				return "", fmt.Errorf("format(%q): no argument %s", f, f[i:i+j+1])
			}
			b.WriteString(ToString(args[n]))
			i += j
		case f[i] == '}':
			return "", errors.New("format: a lone }")
		default:
			b.WriteByte(f[i])
		}
	}
	return b.String(), nil
}

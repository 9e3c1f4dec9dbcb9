package workflowcheck

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rhysd/actionlint"
)

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

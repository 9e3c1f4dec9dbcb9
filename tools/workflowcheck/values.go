package workflowcheck

import (
	"encoding/json"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/rhysd/actionlint"
)

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

package workflowcheck

import (
	"math"
	"testing"
)

// TestEval pins the evaluator to GitHub's expression semantics
// (docs.github.com, "Evaluate expressions in workflows and actions").
func TestEval(t *testing.T) {
	c := &Context{Values: map[string]any{
		"github": map[string]any{"event_name": "workflow_dispatch", "ref": "refs/heads/main",
			"event": map[string]any{"inputs": map[string]any{"label": ""}}},
		"inputs": map[string]any{"label": "", "flag": false, "n": 3.0},
		"matrix": map[string]any{"os": []any{"linux", "Windows"}},
		"steps":  map[string]any{"a": map[string]any{"outputs": map[string]any{"x": "1"}}, "b": map[string]any{"outputs": map[string]any{"x": "2"}}},
	}}
	for _, tc := range []struct {
		expr string
		want any
	}{
		// && and || return an operand: an empty string is falsy, so the
		// old e2e.yaml form always gave its fallback.
		{"github.event_name == 'workflow_dispatch' && '' || 'vm-smoke'", "vm-smoke"},
		{"github.event_name == 'workflow_dispatch' && inputs.label || 'vm-smoke'", "vm-smoke"},
		{"github.event_name != 'workflow_dispatch' && 'vm-smoke' || ''", ""},
		{"inputs.label", ""},
		{"inputs.missing", nil},
		{"inputs.missing || 'x'", "x"},
		{"'a' && 'b'", "b"},
		{"'' && 'b'", ""},
		{"0 || null", nil},
		{"inputs.n && 'yes'", "yes"},
		// Falsy values.
		{"!''", true}, {"!0", true}, {"!-0", true}, {"!null", true}, {"!false", true}, {"!fromJSON('[]')", false},
		{"!'false'", false}, {"!'0'", false},
		// Loose equality, case-insensitive strings.
		{"'ABC' == 'abc'", true},
		{"github.EVENT_NAME == 'Workflow_Dispatch'", true},
		{"null == 0", true}, {"null == ''", true}, {"'' == 0", true}, {"'1' == 1", true}, {"'1.0' == 1", true},
		{"true == 1", true}, {"false == ''", true}, {"'abc' == 0", false}, {"'true' == true", false},
		{"fromJSON('[]') == fromJSON('[]')", false}, {"matrix.os == matrix.os", true},
		{"1 < 2", true}, {"'a' < 'B'", true}, {"'x' > 1", false}, {"'x' < 1", false},
		// Property access.
		{"github['event_name']", "workflow_dispatch"},
		{"github.event.inputs.label", ""},
		{"matrix.os[1]", "Windows"},
		{"matrix.os[5]", nil},
		{"fromJSON('[{\"x\": 1}, {\"y\": 2}, {\"x\": 3}]').*.x", []any{1.0, 3.0}},
		{"contains(steps.*.outputs.x, '2')", true},
		// Functions.
		{"contains(matrix.os, 'windows')", true},
		{"contains('Hello', 'ELL')", true},
		{"startsWith(github.ref, 'REFS/heads/')", true},
		{"endsWith(github.ref, '/main')", true},
		{"format('{0}/{1} {{x}}', 'a', 2)", "a/2 {x}"},
		{"join(matrix.os, ', ')", "linux, Windows"},
		{"fromJSON('{\"a\": [1, true]}').a[0]", 1.0},
		{"toJSON(inputs.n)", "3"},
		{"always()", true}, {"success()", true}, {"failure()", false},
	} {
		got, err := Eval(tc.expr, c)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if ToString(got) != ToString(tc.want) || kind(got) != kind(tc.want) {
			t.Errorf("%s = %#v, want %#v", tc.expr, got, tc.want)
		}
	}
	for _, bad := range []string{"nosuchcontext.x", "nosuchfunc()", "contains('a')", "'unterminated", "format('{1}', 'a')", "a ==="} {
		if v, err := Eval(bad, c); err == nil {
			t.Errorf("%s = %#v, want an error", bad, v)
		}
	}
	if !math.IsNaN(ToNumber("abc")) || ToNumber(" 12 ") != 12 || ToNumber("0x10") != 16 || ToNumber("") != 0 {
		t.Error("ToNumber")
	}
}

// TestInterpolateAndCondition: a value that is one expression keeps its
// type, text around expressions makes a string; if: accepts both forms
// and implies success().
func TestInterpolateAndCondition(t *testing.T) {
	c := &Context{Values: map[string]any{"inputs": map[string]any{"dir": "out", "n": 2.0, "empty": ""}}}
	if v, err := Interpolate("${{ fromJSON('[\"self-hosted\", \"kvm\"]') }}", c); err != nil || ToString(v) != "[\n  \"self-hosted\",\n  \"kvm\"\n]" {
		t.Errorf("array value: %#v, %v", v, err)
	}
	if v, err := Interpolate("${{ inputs.n }}", c); err != nil || v != 2.0 {
		t.Errorf("number value: %#v, %v", v, err)
	}
	if v, err := InterpolateString("a ${{ inputs.dir }}/b ${{ inputs.n }} ${{ inputs.none }}.", c); err != nil || v != "a out/b 2 ." {
		t.Errorf("template: %q, %v", v, err)
	}
	if v, err := InterpolateString("${{ inputs.dir }}\n${{ inputs.empty }}\n", c); err != nil || v != "out\n\n" {
		t.Errorf("lines: %q, %v", v, err)
	}
	for _, tc := range []struct {
		cond, status string
		want         bool
	}{
		{"", StatusSuccess, true},
		{"", StatusFailure, false},
		{"always()", StatusFailure, true},
		{"${{ always() }}", StatusCancelled, true},
		{"inputs.dir == 'out'", StatusSuccess, true},
		{"inputs.dir == 'out'", StatusFailure, false},
		{"always() && inputs.dir == 'out'", StatusFailure, true},
		{"failure()", StatusFailure, true},
		{"!cancelled()", StatusFailure, true},
		{"!cancelled()", StatusCancelled, false},
		{"${{ inputs.empty }}", StatusSuccess, false},
		{"${{ inputs.empty }} ", StatusSuccess, false},
		// Text around an expression is a non-empty string: true.
		{"${{ false }} x", StatusSuccess, true},
	} {
		got, err := Condition(tc.cond, &Context{Values: c.Values, Status: tc.status})
		if err != nil || got != tc.want {
			t.Errorf("if: %q (status %s) = %v, %v; want %v", tc.cond, tc.status, got, err, tc.want)
		}
	}
}

package mutate

import (
	"fmt"
	"strings"
)

// Operator is a kind of mutation.
type Operator string

// The operators.
const (
	// OpNegate negates a condition: == to !=, < to >=, x to !x, !x to x.
	OpNegate Operator = "negate-condition"
	// OpTrue and OpFalse replace a condition by a constant.
	OpTrue  Operator = "condition-true"
	OpFalse Operator = "condition-false"
	// OpBoundary shifts a boundary: < to <=, <= to <, > to >=, >= to >.
	OpBoundary Operator = "shift-boundary"
	// OpLogical swaps && and ||.
	OpLogical Operator = "swap-logical"
	// OpRemove removes a statement: a call, an assignment, an increment,
	// a send, a defer, a return, a break or a continue.
	OpRemove Operator = "remove-statement"
	// OpInsertBreak inserts break at the start or the end of a loop's
	// body (the loop runs never or once).
	OpInsertBreak Operator = "insert-break"
	// OpInsertReturn inserts a return (of zero values) at the start of a
	// loop's body.
	OpInsertReturn Operator = "insert-return"
	// OpLoopControl swaps break and continue.
	OpLoopControl Operator = "swap-loop-control"
	// OpArithmetic swaps + and -, * and /, % to *, ++ and --, += and -=.
	OpArithmetic Operator = "swap-arithmetic"
	// OpConstant changes a number n to n+1 or to 0, true to false.
	OpConstant Operator = "change-constant"
	// OpSwapArgs swaps two neighbouring arguments of one type.
	OpSwapArgs Operator = "swap-arguments"
)

// Operators lists every operator, in the order reports show them.
var Operators = []Operator{OpNegate, OpTrue, OpFalse, OpBoundary, OpLogical, OpRemove, OpInsertBreak, OpInsertReturn,
	OpLoopControl, OpArithmetic, OpConstant, OpSwapArgs}

// Mutant is one small change to one file.
type Mutant struct {
	// ID numbers the mutants of one generation, from 1, in file and
	// position order.
	ID int `json:"id"`
	// Key names the mutant across generations: its file, function,
	// operator, the text it replaces and the replacement, and which of
	// the identical changes in that function it is. Line numbers are not
	// part of it, so an edit elsewhere in the file keeps it.
	Key string `json:"key"`
	// File is the file's path in the module, with slashes.
	File string `json:"file"`
	// Func is the function (or "const"/"var" for a declaration).
	Func     string   `json:"func"`
	Line     int      `json:"line"`
	Column   int      `json:"column"`
	Operator Operator `json:"operator"`
	// Original is the text the mutant replaces, Replacement its new text.
	Original    string `json:"original"`
	Replacement string `json:"replacement"`
	// Unobservable says why the change cannot reach what the harness
	// observes, by construction ("" when it may).
	Unobservable string `json:"unobservable,omitempty"`

	start, end int // byte offsets of Original in the file
}

// Apply returns src, the unmutated file, with the mutant's change.
func (m Mutant) Apply(src []byte) ([]byte, error) {
	if m.start < 0 || m.end > len(src) || m.start > m.end || string(src[m.start:m.end]) != m.Original {
		return nil, fmt.Errorf("mutant %d (%s): %s:%d no longer holds %q", m.ID, m.Operator, m.File, m.Line, short(m.Original, 60))
	}
	out := make([]byte, 0, len(src)+len(m.Replacement))
	out = append(out, src[:m.start]...)
	out = append(out, m.Replacement...)
	return append(out, src[m.end:]...), nil
}

// Change describes the change in one line: "x == y → x != y".
func (m Mutant) Change() string {
	from, to := oneLine(m.Original), oneLine(m.Replacement)
	switch {
	case to == "":
		return "removed: " + short(from, 80)
	case from == "":
		return "inserted: " + short(to, 80)
	}
	return short(from, 60) + " → " + short(to, 60)
}

// Where is "file:line".
func (m Mutant) Where() string { return fmt.Sprintf("%s:%d", m.File, m.Line) }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func short(s string, n int) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

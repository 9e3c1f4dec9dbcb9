package mutate

import (
	"fmt"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/scenarios/fileformat"
)

// DefaultTriageFile is the triage file of bootproof's reconciler, in the
// module.
const DefaultTriageFile = "kmm/mutation-triage.yaml"

// maxTriageSize bounds a triage file's size.
const maxTriageSize = 1 << 20

// Triage is the triage file: the survivors explained, each matched by
// its key or by its file, function and operator. An equivalent mutant
// cannot change what the reconciler does (it leaves the score); a gap is
// a real defect the catalog cannot see yet, named with the situation it
// lacks (it counts as not killed).
type Triage struct {
	fileformat.Header `yaml:",inline"`
	// Equivalent lists the equivalent mutants.
	Equivalent []TriageEntry `yaml:"equivalent"`
	// Gaps lists the known gaps.
	Gaps []TriageEntry `yaml:"gaps"`

	path string
}

// TriageKind is what a triage entry says of its mutants.
type TriageKind string

// The triage kinds.
const (
	KindEquivalent TriageKind = "equivalent"
	KindGap        TriageKind = "gap"
)

// TriageEntry matches mutants and says why they are equivalent.
type TriageEntry struct {
	// Key matches one mutant by its key (Mutant.Key).
	Key string `yaml:"key"`
	// File, Func and Operator match every mutant of a function (File and
	// Func, globs), of one operator when Operator is set. Key and these
	// exclude each other.
	File     string   `yaml:"file"`
	Func     string   `yaml:"func"`
	Operator Operator `yaml:"operator"`
	// Original, with File and Func, matches only the mutants whose
	// replaced text (Mutant.Original, on one line) matches it (a glob).
	Original string `yaml:"original"`
	// Unreached, with File and Func, matches only the mutants in code no
	// scenario ran (the unmutated reconciler's coverage proves it).
	Unreached bool `yaml:"unreached"`
	// Why says why the change cannot alter what the reconciler does
	// (equivalent), or which situation the catalog lacks to see it (gap).
	Why string `yaml:"why"`

	kind TriageKind
	line int
}

// ReadTriage reads a triage file; a missing field, an unknown operator
// or a pattern that is not a glob is an error naming the file, line and
// field.
func ReadTriage(file string) (*Triage, error) {
	data, err := fileformat.ReadInputFile(file, maxTriageSize)
	if err != nil {
		return nil, err
	}
	t := &Triage{path: file}
	doc, _, err := fileformat.DecodeVersioned(file, data, contract.KindMutationTriage, t)
	if err != nil {
		return nil, err
	}
	for _, list := range []struct {
		kind    TriageKind
		entries []TriageEntry
	}{{KindEquivalent, t.Equivalent}, {KindGap, t.Gaps}} {
		for i := range list.entries {
			if err := list.entries[i].validate(file, doc, list.kind, i); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

// validate checks entry i of the kind's list.
func (e *TriageEntry) validate(file string, doc *yaml.Node, kind TriageKind, i int) error {
	e.kind = kind
	e.line = itemLine(doc, string(kind)+listSuffix(kind), i)
	bad := func(field, msg string) error {
		return &fileformat.FieldError{File: file, Line: e.line, Field: fmt.Sprintf("%s%s[%d].%s", kind, listSuffix(kind), i, field), Msg: msg}
	}
	switch {
	case e.Key != "" && (e.File != "" || e.Func != "" || e.Operator != "" || e.Original != "" || e.Unreached):
		return bad("key", "give either key (one mutant) or file and func (with an optional operator, original and unreached), not both")
	case e.Key == "" && (e.File == "" || e.Func == ""):
		return bad("file", "required with func when there is no key: the file and the function whose mutants it explains")
	case e.Operator != "" && !knownOperator(e.Operator):
		return bad("operator", fmt.Sprintf("%q: accepted: %s", e.Operator, joinOperators()))
	case strings.TrimSpace(e.Why) == "" && kind == KindEquivalent:
		return bad("why", "required: why the change cannot alter what the reconciler does")
	case strings.TrimSpace(e.Why) == "":
		return bad("why", "required: which situation the catalog lacks to see the defect")
	}
	for _, p := range []string{e.File, e.Func, e.Original} {
		if _, err := path.Match(p, ""); err != nil {
			return bad("func", fmt.Sprintf("%q is not a glob: %v", p, err))
		}
	}
	return nil
}

// listSuffix makes a kind its list's key: equivalent, gaps.
func listSuffix(k TriageKind) string {
	if k == KindGap {
		return "s"
	}
	return ""
}

// itemLine is the line of item i of the sequence under key in doc (a
// mapping); 0 when absent.
func itemLine(doc *yaml.Node, key string, i int) int {
	if doc == nil || doc.Kind != yaml.MappingNode {
		return 0
	}
	for j := 0; j+1 < len(doc.Content); j += 2 {
		if seq := doc.Content[j+1]; doc.Content[j].Value == key && seq.Kind == yaml.SequenceNode && i < len(seq.Content) {
			return seq.Content[i].Line
		}
	}
	return 0
}

func knownOperator(o Operator) bool {
	for _, k := range Operators {
		if k == o {
			return true
		}
	}
	return false
}

func joinOperators() string {
	s := make([]string, len(Operators))
	for i, o := range Operators {
		s[i] = string(o)
	}
	return strings.Join(s, ", ")
}

// Lookup returns the entry that explains m, or nil: the first of the
// equivalent ones, then of the gaps. unreached: no scenario ran the code
// m changes.
func (t *Triage) Lookup(m Mutant, unreached bool) *TriageEntry {
	if t == nil {
		return nil
	}
	for _, e := range t.entries() {
		if e.Unreached && !unreached {
			continue
		}
		if e.Key != "" {
			if e.Key == m.Key {
				return e
			}
			continue
		}
		if f, _ := path.Match(e.File, m.File); !f {
			continue
		}
		if fn, _ := path.Match(e.Func, m.Func); !fn {
			continue
		}
		if e.Original != "" {
			if o, _ := path.Match(e.Original, oneLine(m.Original)); !o {
				continue
			}
		}
		if e.Operator == "" || e.Operator == m.Operator {
			return e
		}
	}
	return nil
}

func (t *Triage) entries() []*TriageEntry {
	var out []*TriageEntry
	for i := range t.Equivalent {
		out = append(out, &t.Equivalent[i])
	}
	for i := range t.Gaps {
		out = append(out, &t.Gaps[i])
	}
	return out
}

// Kind is what the entry says of its mutants.
func (e *TriageEntry) Kind() TriageKind { return e.kind }

// Where names the entry: "file:line".
func (e *TriageEntry) Where(t *Triage) string { return fmt.Sprintf("%s:%d", t.path, e.line) }

// Unused lists the entries that match none of ms: stale after a change to
// the code.
func (t *Triage) Unused(ms []Mutant) []string {
	if t == nil {
		return nil
	}
	used := map[*TriageEntry]bool{}
	for _, m := range ms {
		for _, unreached := range []bool{false, true} {
			if e := t.Lookup(m, unreached); e != nil {
				used[e] = true
			}
		}
	}
	var out []string
	for _, e := range t.entries() {
		if !used[e] {
			what := e.Key
			if what == "" {
				what = e.File + " " + e.Func
			}
			out = append(out, fmt.Sprintf("%s: %s matches no mutant", e.Where(t), what))
		}
	}
	return out
}

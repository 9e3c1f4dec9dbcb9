package mutate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTriage(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "triage.yaml")
	if err := os.WriteFile(p, []byte("apiVersion: bootproof.dev/v1alpha1\nkind: MutationTriage\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadTriageRefusesBadEntries(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"no why", "equivalent:\n  - key: a#1\n", ":4: field equivalent[0].why: required: why the change cannot alter"},
		{"gap without why", "gaps:\n  - key: a#1\n", ":4: field gaps[0].why: required: which situation the catalog lacks"},
		{"key and func", "equivalent:\n  - {key: a#1, file: x.go, func: f, why: w}\n", "field equivalent[0].key: give either key"},
		{"func without file", "gaps:\n  - {func: f, why: w}\n", "field gaps[0].file: required with func"},
		{"unknown operator", "equivalent:\n  - {file: x.go, func: f, operator: flip, why: w}\n", `"flip": accepted: negate-condition, condition-true`},
		{"bad glob", "equivalent:\n  - {file: '[', func: f, why: w}\n", "is not a glob"},
		{"unknown field", "equivalent:\n  - {key: a#1, why: w, reason: x}\n", "reason"},
		{"wrong kind", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			p := writeTriage(t, body)
			if tc.name == "wrong kind" {
				if err := os.WriteFile(p, []byte("apiVersion: bootproof.dev/v1alpha1\nkind: Subject\nequivalent: []\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				tc.want = "MutationTriage"
			}
			_, err := ReadTriage(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("ReadTriage: %v; want an error naming %s and containing %q", err, p, tc.want)
			}
		})
	}
}

func TestTriageLookup(t *testing.T) {
	set := genSet(t)
	byOp := func(op Operator) Mutant {
		for _, m := range set.Mutants {
			if m.Operator == op {
				return m
			}
		}
		t.Fatalf("no mutant of %s", op)
		return Mutant{}
	}
	logical, pairSwap := byOp(OpLogical), Mutant{}
	for _, m := range set.Mutants {
		if m.Func == "pair" {
			pairSwap = m
		}
	}
	p := writeTriage(t, "equivalent:\n  - key: '"+logical.Key+"'\n    why: because\n"+
		"gaps:\n  - {file: gen.go, func: pair, why: a situation the catalog lacks}\n"+
		"  - {file: gen.go, func: nothing, why: stale}\n")
	tr, err := ReadTriage(p)
	if err != nil {
		t.Fatal(err)
	}
	if e := tr.Lookup(logical, false); e == nil || e.Kind() != KindEquivalent || e.Why != "because" {
		t.Errorf("Lookup(%s) = %+v, want the equivalent entry", logical.Key, e)
	}
	if e := tr.Lookup(pairSwap, false); e == nil || e.Kind() != KindGap {
		t.Errorf("Lookup(mutant of pair) = %+v, want the gap entry", e)
	}
	if e := tr.Lookup(byOp(OpInsertBreak), false); e != nil {
		t.Errorf("Lookup(an insert-break of Cond) = %+v, want none", e)
	}
	unused := tr.Unused(set.Mutants)
	if len(unused) != 1 || !strings.Contains(unused[0], "nothing") || !strings.Contains(unused[0], p+":8") {
		t.Errorf("Unused = %q, want the entry of func nothing, at line 8", unused)
	}
	if triaged(tr.Lookup(logical, false)) != Equivalent || triaged(tr.Lookup(pairSwap, false)) != Gap {
		t.Errorf("triaged statuses wrong")
	}
}

// TestTriageOriginal: an entry narrowed by the replaced text matches only
// the mutants of that text.
func TestTriageOriginal(t *testing.T) {
	set := genSet(t)
	p := writeTriage(t, "equivalent:\n  - {file: gen.go, func: (*T).Cond, operator: condition-false, original: 'i == *', why: w}\n")
	tr, err := ReadTriage(p)
	if err != nil {
		t.Fatal(err)
	}
	var matched []string
	for _, m := range set.Mutants {
		if tr.Lookup(m, false) != nil {
			matched = append(matched, m.Change())
		}
	}
	if len(matched) != 1 || matched[0] != "i == 2 → false" {
		t.Errorf("matched %q, want only the condition-false of i == 2", matched)
	}
	if _, err := ReadTriage(writeTriage(t, "equivalent:\n  - {key: a#1, original: x, why: w}\n")); err == nil || !strings.Contains(err.Error(), "either key") {
		t.Errorf("a key with an original: %v, want refused", err)
	}
}

// TestTriageUnreached: an entry limited to unreached code explains a
// mutant only where no scenario ran it.
func TestTriageUnreached(t *testing.T) {
	set := genSet(t)
	p := writeTriage(t, "equivalent:\n  - {file: gen.go, func: pair, unreached: true, why: w}\n")
	tr, err := ReadTriage(p)
	if err != nil {
		t.Fatal(err)
	}
	var m Mutant
	for _, x := range set.Mutants {
		if x.Func == "pair" {
			m = x
		}
	}
	if tr.Lookup(m, false) != nil || tr.Lookup(m, true) == nil {
		t.Errorf("an unreached-only entry: reached %v, unreached %v; want it only for unreached code", tr.Lookup(m, false), tr.Lookup(m, true))
	}
	if u := tr.Unused(set.Mutants); len(u) != 0 {
		t.Errorf("Unused = %q, want none: the entry matches pair", u)
	}
}

// TestRepoTriageFile reads bootproof's own triage file: it must parse,
// and each of its entries must match some mutant of the reconciler (an
// entry that matches none is stale, or shadowed by an earlier one).
func TestRepoTriageFile(t *testing.T) {
	tr, err := ReadTriage(filepath.Join("..", "..", DefaultTriageFile))
	if err != nil {
		t.Fatal(err)
	}
	set, err := Generate(filepath.Join("..", ".."), DefaultPackages)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range tr.Unused(set.Mutants) {
		t.Error(u)
	}
}

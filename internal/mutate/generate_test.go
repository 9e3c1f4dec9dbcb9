package mutate

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// genSet generates the mutants of testdata/gen, a module of one file
// with a case of every operator.
func genSet(t *testing.T) *Set {
	t.Helper()
	set, err := Generate(filepath.Join("testdata", "gen"), []string{"."})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestGenerateGolden pins every mutant of testdata/gen: operator, place,
// change, and whether it compiles (go test -update rewrites it).
func TestGenerateGolden(t *testing.T) {
	set := genSet(t)
	var b strings.Builder
	for _, m := range set.Mutants {
		note := ""
		var ce *CompileError
		if err := set.Check(m); errors.As(err, &ce) {
			note = " [does not compile]"
		} else if err != nil {
			t.Fatalf("mutant %d: %v", m.ID, err)
		}
		if m.Unobservable != "" {
			note += " [unobservable]"
		}
		fmt.Fprintf(&b, "%d %s %s %s: %s%s\n", m.ID, m.Where(), m.Func, m.Operator, m.Change(), note)
	}
	golden := filepath.Join("testdata", "gen.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("mutants of testdata/gen differ from %s (go test -run TestGenerateGolden -update rewrites it):\n%s", golden, b.String())
	}
	seen := map[Operator]bool{}
	for _, m := range set.Mutants {
		seen[m.Operator] = true
	}
	for _, o := range Operators {
		if !seen[o] {
			t.Errorf("testdata/gen has no case of operator %s", o)
		}
	}
}

// TestKeysUniqueAndStable: every key is unique, and an edit above a
// function leaves its mutants' keys as they were (lines are not in it).
func TestKeysUniqueAndStable(t *testing.T) {
	set := genSet(t)
	keys := map[string]int{}
	for _, m := range set.Mutants {
		if other, dup := keys[m.Key]; dup {
			t.Errorf("mutants %d and %d share key %s", other, m.ID, m.Key)
		}
		keys[m.Key] = m.ID
	}
	dir := t.TempDir()
	src := string(set.Sources["gen.go"])
	shifted := strings.Replace(src, "const limit = 3", "// a comment above\n// and another\nconst limit = 3", 1)
	for _, f := range []string{"go.mod", "gen.go"} {
		data := []byte(shifted)
		if f == "go.mod" {
			data = []byte("module example.com/gen\n\ngo 1.26\n")
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	again, err := Generate(dir, []string{"."})
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Mutants) != len(set.Mutants) {
		t.Fatalf("%d mutants after adding comments, %d before", len(again.Mutants), len(set.Mutants))
	}
	for i, m := range again.Mutants {
		if m.Key != set.Mutants[i].Key {
			t.Errorf("mutant %d: key %s after adding comments, %s before", m.ID, m.Key, set.Mutants[i].Key)
		}
		if m.Line != set.Mutants[i].Line+2 {
			t.Errorf("mutant %d: line %d after adding two lines above, %d before", m.ID, m.Line, set.Mutants[i].Line)
		}
	}
}

// TestApplyRefusesAChangedFile: a mutant applies only to the text it was
// made from.
func TestApplyRefusesAChangedFile(t *testing.T) {
	set := genSet(t)
	m := set.Mutants[0]
	if _, err := m.Apply(set.Sources[m.File]); err != nil {
		t.Fatalf("apply to its own file: %v", err)
	}
	if _, err := m.Apply([]byte("package gen\n")); err == nil {
		t.Errorf("mutant %d applied to another file", m.ID)
	}
}

// TestReconcilerMessagesUnobservable: on the real reconciler, removing a
// log line or an Event is unobservable, and removing what records a
// pod's result is not.
func TestReconcilerMessagesUnobservable(t *testing.T) {
	set, err := Generate(filepath.Join("..", ".."), DefaultPackages)
	if err != nil {
		t.Fatal(err)
	}
	var logs, events, observable int
	for _, m := range set.Mutants {
		if m.Operator != OpRemove {
			continue
		}
		o := oneLine(m.Original)
		switch {
		case strings.HasPrefix(o, "log.") || strings.HasPrefix(o, "mlog."):
			logs++
			if m.Unobservable != WhyLog {
				t.Errorf("mutant %d removes a log line (%s) but is not unobservable as one: %q", m.ID, short(o, 60), m.Unobservable)
			}
		case strings.HasPrefix(o, "p.emit("):
			events++
			if m.Unobservable != WhyEvent {
				t.Errorf("mutant %d removes an Event (%s) but is not unobservable as one: %q", m.ID, short(o, 60), m.Unobservable)
			}
		case strings.HasPrefix(o, "p.release[") || strings.HasPrefix(o, "setStatus(") || strings.HasPrefix(o, "r.plan("):
			observable++
			if m.Unobservable != "" {
				t.Errorf("mutant %d removes %s, which changes what the reconciler does, but is marked unobservable: %s", m.ID, short(o, 60), m.Unobservable)
			}
		}
	}
	if logs == 0 || events == 0 || observable == 0 {
		t.Errorf("found %d log lines, %d Events and %d observable statements removed: the reconciler has all three", logs, events, observable)
	}
}

// TestSnapshot copies the module but for build outputs, git's files and
// nested modules, and generates the same mutants from the copy.
func TestSnapshot(t *testing.T) {
	src := t.TempDir()
	for _, f := range []string{"go.mod", "gen.go"} {
		data, err := os.ReadFile(filepath.Join("testdata", "gen", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"bin", ".git", "_output", "tools/other"} {
		if err := os.MkdirAll(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
		name := "x"
		if d == "tools/other" {
			name = "go.mod"
		}
		if err := os.WriteFile(filepath.Join(src, d, name), []byte("module other\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	to, err := Snapshot(src, filepath.Join(t.TempDir(), "snap"))
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"bin", ".git", "_output", "tools/other"} {
		if _, err := os.Stat(filepath.Join(to, gone)); err == nil {
			t.Errorf("the snapshot holds %s", gone)
		}
	}
	a, err := Generate(src, []string{"."})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(to, []string{"."})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Mutants) != len(b.Mutants) || a.Mutants[0].Key != b.Mutants[0].Key {
		t.Errorf("the snapshot gives %d mutants, the module %d", len(b.Mutants), len(a.Mutants))
	}
	if _, err := Snapshot(t.TempDir(), filepath.Join(t.TempDir(), "x")); err == nil {
		t.Errorf("a snapshot of a directory without go.mod was taken")
	}
}

package reports

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestJUnitWrittenLast: junit.xml is the last file Write writes, and a
// failure at any earlier step leaves no junit.xml, not even the one an
// earlier run left, so CI never publishes a stale or partial one.
func TestJUnitWrittenLast(t *testing.T) {
	var order []string
	writeFile = func(path string, data []byte, perm os.FileMode) error {
		order = append(order, filepath.Base(path))
		return writeFileAtomic(path, data, perm)
	}
	t.Cleanup(func() { writeFile = writeFileAtomic })
	dir := t.TempDir()
	if err := Write(dir, sample(), time.Now()); err != nil {
		t.Fatal(err)
	}
	want := []string{ResultsFile, TraceFile, HTMLFile, SummaryFile, JUnitFile}
	if !slices.Equal(order, want) {
		t.Fatalf("write order %v, want %v", order, want)
	}

	// Every step before junit.xml fails once in turn: the error names the
	// file, and the junit.xml of the run before is gone.
	for _, failing := range want[:len(want)-1] {
		writeFile = func(path string, data []byte, perm os.FileMode) error {
			if filepath.Base(path) == failing {
				return &os.PathError{Op: "write", Path: path, Err: errors.New("disk full")}
			}
			return writeFileAtomic(path, data, perm)
		}
		err := Write(dir, sample(), time.Now())
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, failing)) {
			t.Errorf("%s failing: error %v does not name it", failing, err)
		}
		if _, err := os.Stat(filepath.Join(dir, JUnitFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s failing: junit.xml exists (stat %v)", failing, err)
		}
	}
}

// TestWriteFileAtomic: the file appears whole under its name with the
// mode asked for; no temporary file stays behind, and a failed rename
// (the name is a directory) names the path and leaves nothing.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(path, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "new" {
		t.Errorf("content %q, %v", b, err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v", st.Mode(), err)
	}
	blocked := filepath.Join(dir, JUnitFile)
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := writeFileAtomic(blocked, []byte("<xml/>"), 0o644)
	if err == nil || !strings.Contains(err.Error(), blocked) {
		t.Errorf("rename onto a directory: error %v does not name %s", err, blocked)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
	if err := writeFileAtomic(filepath.Join(dir, "no-such-dir", "f"), nil, 0o644); err == nil || !strings.Contains(err.Error(), "no-such-dir") {
		t.Errorf("missing directory: error %v", err)
	}
}

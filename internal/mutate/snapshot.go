package mutate

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// skipDirs are not copied into a snapshot: build outputs, reports,
// caches and git's own files.
var skipDirs = map[string]bool{".git": true, "bin": true, "_output": true, ".cache": true}

// Snapshot copies the module at dir into to (which must not exist), but
// for build outputs, reports, caches, git's files and nested modules
// (tools/*): a run generates its mutants from the copy and builds them
// there, so that an edit of the checkout while it runs (hours, for every
// mutant) changes neither. It returns to.
func Snapshot(dir, to string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("snapshot of %s: not a Go module's root: %w", dir, err)
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		target := filepath.Join(to, rel)
		switch {
		case d.IsDir() && rel != "." && skipDirs[d.Name()]:
			return filepath.SkipDir
		case d.IsDir() && rel != ".":
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own
			}
			return os.MkdirAll(target, 0o755)
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return nil // symlinks and the like: nothing a build reads
		}
		return copyRegular(path, target)
	})
	if err != nil {
		return "", fmt.Errorf("snapshot of %s into %s: %w", dir, to, err)
	}
	return to, nil
}

func copyRegular(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

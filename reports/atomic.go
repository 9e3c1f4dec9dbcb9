package reports

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeFile writes every report file; tests replace it to watch the order
// of the writes or to make one fail.
var writeFile = writeFileAtomic

// writeFileAtomic writes data to a temporary file in path's directory and
// renames it to path, so a reader (a CI step publishing junit.xml, a
// browser on index.html) sees the old file or the whole new one, never a
// partial one. The error names path.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadInputFileLimit: a file up to the limit is read; one byte more is
// a TooLargeError naming the file and the limit; /dev/zero (endless) is
// refused without reading it whole.
func TestReadInputFileLimit(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.yaml")
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(ok, make([]byte, 1024), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, make([]byte, 1025), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadInputFile(ok, 1024); err != nil || len(data) != 1024 {
		t.Errorf("at the limit: %d bytes, %v", len(data), err)
	}
	var tl *TooLargeError
	_, err := ReadInputFile(big, 1024)
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "1 KiB") {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := ReadInputFile("/dev/zero", MaxInputFileSize); !errors.As(err, &tl) || !strings.Contains(err.Error(), "1 MiB") {
		t.Errorf("/dev/zero: %v", err)
	}
	if _, err := ReadInputFile(filepath.Join(dir, "none.yaml"), 1024); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

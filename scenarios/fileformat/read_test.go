package fileformat

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadInputFileLimit: a file up to the limit is read; one byte more is
// a TooLargeError naming the file and the limit; /dev/zero (endless) is
// refused without being read (a device: TestReadInputFileRegularOnly).
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
	var nr *NotRegularError
	if _, err := ReadInputFile("/dev/zero", MaxInputFileSize); !errors.As(err, &nr) {
		t.Errorf("/dev/zero: %v", err)
	}
	if _, err := ReadInputFile(filepath.Join(dir, "none.yaml"), 1024); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestReadInputFileRegularOnly: a FIFO without a writer is refused at
// once (opening it for reading would block), as are a directory and a
// device; each error names the path and what it is.
func TestReadInputFileRegularOnly(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "scenario.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, "a FIFO, not a regular file"},
		{dir, "a directory, not a regular file"},
		{"/dev/null", "a device, not a regular file"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadInputFile(tc.path, MaxInputFileSize)
			done <- err
		}()
		select {
		case err := <-done:
			var nr *NotRegularError
			if !errors.As(err, &nr) || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want a NotRegularError saying %q", tc.path, err, tc.want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: ReadInputFile still blocked after 30 s", tc.path)
		}
	}
}

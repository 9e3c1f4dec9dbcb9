package fileformat

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// MaxInputFileSize is the largest scenario or subject file read: such
// files are a few KiB, and a larger one is almost surely the wrong file
// (a log, an image), which must not be read whole into memory.
const MaxInputFileSize = 1 << 20

// TooLargeError is an input file over its size limit.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than the limit of %s for an input file: give the scenario or subject file itself (they are a few KiB)", e.Path, byteSize(e.Limit))
}

// NotRegularError is an input path that is not a regular file (a FIFO,
// a device, a directory, a socket): it is not read, so a FIFO cannot hang
// a run before it starts.
type NotRegularError struct {
	Path string
	Mode os.FileMode
}

func (e *NotRegularError) Error() string {
	kind := "not a regular file"
	switch {
	case e.Mode&os.ModeNamedPipe != 0:
		kind = "a FIFO, not a regular file"
	case e.Mode.IsDir():
		kind = "a directory, not a regular file"
	case e.Mode&os.ModeDevice != 0:
		kind = "a device, not a regular file"
	case e.Mode&os.ModeSocket != 0:
		kind = "a socket, not a regular file"
	}
	return fmt.Sprintf("%s is %s: give the file itself", e.Path, kind)
}

// ReadInputFile reads the regular file at path through an io.LimitReader:
// more than limit bytes is a *TooLargeError naming the file and the limit;
// anything but a regular file is a *NotRegularError. The file is opened
// without blocking (a FIFO with no writer would block open itself) and
// checked on the open descriptor, so the check and the read see the same
// file.
func ReadInputFile(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return data, nil
}

// byteSize writes n in the largest binary unit that divides it.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

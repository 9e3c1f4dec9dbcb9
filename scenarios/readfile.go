package scenarios

import (
	"fmt"
	"io"
	"os"
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

// ReadInputFile reads the file at path through an io.LimitReader: more
// than limit bytes is a *TooLargeError naming the file and the limit.
func ReadInputFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
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

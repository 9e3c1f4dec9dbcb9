// Package gen holds one case of every mutation operator, for
// TestGenerateGolden.
package gen

import (
	"errors"
	"fmt"
)

// T has a counter and a set.
type T struct {
	n    int
	seen map[string]bool
}

const limit = 3

// Cond has conditions, arithmetic, loops and calls.
func (t *T) Cond(a, b int, ok bool) (int, error) {
	if a < b && ok {
		return a + b, nil
	}
	for i := 0; i < limit; i++ {
		if i == 2 {
			break
		}
		t.n++
	}
	for k := range t.seen {
		t.seen[k] = false
		continue
	}
	if !ok {
		return 0, errors.New("not ok")
	}
	t.n -= a * b
	return pair(a, b), fmt.Errorf("a=%d b=%d: %w", a, b, errors.ErrUnsupported)
}

func pair(x, y int) int { return x - y }

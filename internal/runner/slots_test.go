package runner

import (
	"testing"
	"time"
)

// TestSlots: cases start in order while they fit the case limit and the
// node budget; a case that does not fit waits and a smaller one behind it
// starts; a case bigger than the whole budget runs alone; no budget means
// only the case limit counts.
func TestSlots(t *testing.T) {
	for _, tc := range []struct {
		name          string
		cases, budget int
		nodes         []int // in start order
		// start is the indexes (into the remaining list) take returns
		// before it blocks, with nothing given back.
		start []int
	}{
		{"no budget: the case limit", 2, 0, []int{50, 50, 50}, []int{0, 0}},
		{"budget: two storms fit, the third waits, a small case passes it", 16, 101, []int{50, 50, 50, 1, 1}, []int{0, 0, 1}},
		{"a case bigger than the budget runs alone", 4, 30, []int{50, 1}, []int{0}},
		{"the case limit still counts within the budget", 2, 100, []int{1, 1, 1}, []int{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSlots(tc.cases, tc.budget)
			nodes := tc.nodes
			for k, want := range tc.start {
				got := s.take(nodes)
				if got != want {
					t.Fatalf("take %d = %d, want %d (remaining %v)", k, got, want, nodes)
				}
				nodes = append(nodes[:got:got], nodes[got+1:]...)
			}
			if len(nodes) == 0 {
				return
			}
			started := make(chan int, 1)
			go func() { started <- s.take(nodes) }()
			select {
			case i := <-started:
				t.Fatalf("take %d = %d, want it to wait (remaining %v)", len(tc.start), i, nodes)
			case <-time.After(50 * time.Millisecond):
			}
			s.give(tc.nodes[0]) // the first case ends
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatal("take still waits after a case ended")
			}
		})
	}
}

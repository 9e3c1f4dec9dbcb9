package runner

import "sync"

// slots hands out the right to start a case: at most cases at once and,
// with a node budget, at most budget nodes across the running cases. A
// case heavier than the whole budget counts as the budget: it runs alone.
type slots struct {
	mu     sync.Mutex
	cond   *sync.Cond
	free   int // cases that may still start
	budget int // nodes for all cases (0: no limit)
	nodes  int // nodes left of budget
}

func newSlots(cases, budget int) *slots {
	s := &slots{free: max(1, cases), budget: max(0, budget), nodes: max(0, budget)}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// weight is what a case of n nodes takes of the budget.
func (s *slots) weight(n int) int {
	if s.budget == 0 {
		return 0
	}
	return min(max(n, 1), s.budget)
}

// take waits until one of the cases whose node counts are nodes (in the
// order they should start) fits, takes its share and returns its index:
// the first that fits, so that a big case waiting for room does not hold
// back the small ones behind it.
func (s *slots) take(nodes []int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.free > 0 {
			for i, n := range nodes {
				if w := s.weight(n); w <= s.nodes || s.budget == 0 {
					s.free--
					s.nodes -= w
					return i
				}
			}
		}
		s.cond.Wait()
	}
}

// give returns what a finished case of n nodes took.
func (s *slots) give(n int) {
	s.mu.Lock()
	s.free++
	s.nodes += s.weight(n)
	s.mu.Unlock()
	s.cond.Broadcast()
}

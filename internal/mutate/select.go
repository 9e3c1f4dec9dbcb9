package mutate

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Selection says which of a set's mutants a run judges.
type Selection struct {
	// Mutants, when set, are the IDs or keys of the mutants to judge.
	Mutants []string
	// Sample, when above 0, judges that many mutants chosen by Seed from
	// those that compile and are observable (a sample of those judged
	// for nothing would measure nothing).
	Sample int
	Seed   string
}

// Select returns the mutants sel chooses from set, in ID order.
func Select(set *Set, sel Selection) ([]Mutant, error) {
	if sel.Sample < 0 {
		return nil, fmt.Errorf("sample size %d: accepted: 0 (every mutant) or more", sel.Sample)
	}
	if len(sel.Mutants) > 0 && sel.Sample > 0 {
		return nil, fmt.Errorf("give either mutants or a sample size, not both")
	}
	if len(sel.Mutants) > 0 {
		var out []Mutant
		for _, want := range sel.Mutants {
			i := slices.IndexFunc(set.Mutants, func(m Mutant) bool { return strconv.Itoa(m.ID) == want || m.Key == want })
			if i < 0 {
				return nil, fmt.Errorf("mutant %q: no mutant has this ID (1 to %d) or key ('bootproof mutate --list' lists them)", want, len(set.Mutants))
			}
			out = append(out, set.Mutants[i])
		}
		slices.SortFunc(out, func(a, b Mutant) int { return cmp.Compare(a.ID, b.ID) })
		return slices.CompactFunc(out, func(a, b Mutant) bool { return a.ID == b.ID }), nil
	}
	if sel.Sample == 0 {
		return slices.Clone(set.Mutants), nil
	}
	var pool []Mutant
	for _, m := range set.Mutants {
		if m.Unobservable == "" && set.Check(m) == nil {
			pool = append(pool, m)
		}
	}
	rank := func(m Mutant) string {
		sum := sha256.Sum256([]byte(sel.Seed + "\x00" + m.Key))
		return string(sum[:])
	}
	slices.SortFunc(pool, func(a, b Mutant) int { return strings.Compare(rank(a), rank(b)) })
	pool = pool[:min(sel.Sample, len(pool))]
	slices.SortFunc(pool, func(a, b Mutant) int { return cmp.Compare(a.ID, b.ID) })
	return pool, nil
}

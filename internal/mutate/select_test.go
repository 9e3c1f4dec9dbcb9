package mutate

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

func ids(ms []Mutant) []int {
	out := make([]int, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func TestSelect(t *testing.T) {
	set := genSet(t)
	all, err := Select(set, Selection{})
	if err != nil || len(all) != len(set.Mutants) {
		t.Fatalf("Select(all) = %d mutants, %v; want %d", len(all), err, len(set.Mutants))
	}
	a, _ := Select(set, Selection{Sample: 5, Seed: "abc"})
	again, _ := Select(set, Selection{Sample: 5, Seed: "abc"})
	other, _ := Select(set, Selection{Sample: 5, Seed: "def"})
	if len(a) != 5 || !slices.Equal(ids(a), ids(again)) {
		t.Errorf("a sample of 5 with one seed: %v, then %v; want 5, the same twice", ids(a), ids(again))
	}
	if slices.Equal(ids(a), ids(other)) {
		t.Errorf("seeds abc and def chose the same sample %v", ids(a))
	}
	for _, m := range a {
		if m.Unobservable != "" || set.Check(m) != nil {
			t.Errorf("the sample holds mutant %d, unobservable or not compiling", m.ID)
		}
	}
	if !slices.IsSorted(ids(a)) {
		t.Errorf("sample %v not in ID order", ids(a))
	}
	two, err := Select(set, Selection{Mutants: []string{"3", set.Mutants[0].Key, "3"}})
	if err != nil || !slices.Equal(ids(two), []int{1, 3}) {
		t.Errorf("Select(3, key of 1, 3) = %v, %v; want [1 3]", ids(two), err)
	}
	for _, bad := range []Selection{{Mutants: []string{"9999"}}, {Mutants: []string{"1"}, Sample: 2}, {Sample: -1}} {
		if _, err := Select(set, bad); err == nil {
			t.Errorf("Select(%+v) accepted it", bad)
		} else if bad.Sample == 0 && !strings.Contains(err.Error(), strconv.Itoa(len(set.Mutants))) {
			t.Errorf("Select(%+v): %v; want the IDs accepted named", bad, err)
		}
	}
}

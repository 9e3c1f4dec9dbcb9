package fakes

import (
	"github.com/bootproof/bootproof/contract"

	"slices"
	"testing"
)

// TestActionCountsPerBoot: counts belong to one boot; the first action of
// a new boot starts them again, and a boot asks only for its own.
func TestActionCountsPerBoot(t *testing.T) {
	var a actionCounts
	if got := a.in("a"); got != nil {
		t.Errorf("no action yet: %+v", got)
	}
	a.add("a", "dummy", true)
	a.add("a", "dummy", true)
	a.add("a", "dummy", false)
	a.add("a", "bonding", true)
	if got, want := a.in("a"), []contract.ModuleActions{{Module: "bonding", Loads: 1}, {Module: "dummy", Loads: 2, Unloads: 1}}; !slices.Equal(got, want) {
		t.Errorf("boot a: %+v, want %+v", got, want)
	}
	if got := a.in("b"); got != nil {
		t.Errorf("boot b before any action in it: %+v, want none", got)
	}
	a.add("b", "dummy", true)
	if got, want := a.in("b"), []contract.ModuleActions{{Module: "dummy", Loads: 1}}; !slices.Equal(got, want) {
		t.Errorf("boot b: %+v, want %+v", got, want)
	}
	if got := a.in("a"); got != nil {
		t.Errorf("boot a after b began: %+v, want none", got)
	}
}

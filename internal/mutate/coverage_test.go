package mutate

import (
	"testing"
)

func TestParseProfileAndReached(t *testing.T) {
	profile := "mode: set\n" +
		"example.com/m/a.go:3.10,5.2 2 1\n" +
		"example.com/m/a.go:6.3,8.4 1 0\n" +
		"example.com/m/a.go:6.3,8.4 1 1\n" + // the same block from a second counter file
		"example.com/m/a.go:10.1,12.2 3 0\n"
	c, err := parseProfile([]byte(profile), "example.com/m")
	if err != nil {
		t.Fatal(err)
	}
	if c.Statements != 6 || c.Covered != 3 {
		t.Errorf("statements %d, covered %d; want 6 and 3 (the repeated block merged, covered once)", c.Statements, c.Covered)
	}
	for _, tc := range []struct {
		line, col int
		want      bool
	}{
		{3, 10, true},  // a block's start
		{4, 1, true},   // inside a covered block
		{5, 2, true},   // a block's end is not in it, and no block holds it: coverage does not count it
		{7, 1, true},   // merged block: counted by the second file
		{11, 5, false}, // a block never run
		{20, 1, true},  // outside every block: not something coverage counts
	} {
		m := Mutant{File: "a.go", Line: tc.line, Column: tc.col}
		if got := c.Reached(m); got != tc.want {
			t.Errorf("Reached(%d.%d) = %v, want %v", tc.line, tc.col, got, tc.want)
		}
	}
	if (*Coverage)(nil).Reached(Mutant{File: "a.go", Line: 11, Column: 5}) != true {
		t.Errorf("no coverage must reach everything")
	}
}

func TestParseProfileRefusesBadLines(t *testing.T) {
	for _, bad := range []string{"mode: set\nx.go:1.1,2.2 1\n", "mode: set\nx.go:1.1-2.2 1 1\n", "mode: set\nx.go:1.1,2.2 a 1\n", "mode: set\nno colon here\n"} {
		if _, err := parseProfile([]byte(bad), "m"); err == nil {
			t.Errorf("parseProfile(%q) accepted it", bad)
		}
	}
}

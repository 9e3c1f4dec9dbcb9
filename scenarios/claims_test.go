package scenarios

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestUpdateClaims: a claim opens when an entry with a bootId appears or
// names another boot, and closes when it goes or changes; an entry
// without a bootId claims nothing.
func TestUpdateClaims(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	e := func(boot string) StatusEntry { return StatusEntry{Name: "dummy", ModuleName: "dummy", BootID: boot} }
	var c []StatusClaim
	c = updateClaims(c, []StatusEntry{e("A")}, at(1))
	c = updateClaims(c, []StatusEntry{e("A"), {Name: "other", ModuleName: "other"}}, at(2)) // no bootId: no claim
	c = updateClaims(c, []StatusEntry{e("B")}, at(3))
	c = updateClaims(c, nil, at(4))
	c = updateClaims(c, []StatusEntry{e("B")}, at(5))
	want := []StatusClaim{
		{Entry: "dummy", Module: "dummy", Boot: "A", From: at(1), Until: at(3)},
		{Entry: "dummy", Module: "dummy", Boot: "B", From: at(3), Until: at(4)},
		{Entry: "dummy", Module: "dummy", Boot: "B", From: at(5)},
	}
	if !slices.Equal(c, want) {
		t.Errorf("claims = %+v, want %+v", c, want)
	}
}

// TestJudgeStatusAfterLoad: a claim passes when the kernel had loaded the
// module by the claim plus the slack (by the observer's sighting or the
// kernel's own stamp), and fails when the load came later or never came
// while the node stayed in the boot.
func TestJudgeStatusAfterLoad(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	claim := func(boot string, from, until float64) StatusClaim {
		c := StatusClaim{Entry: "dummy", Module: "dummy", Boot: boot, From: at(from)}
		if until > 0 {
			c.Until = at(until)
		}
		return c
	}
	truths := []TruthSeen{{At: at(0), BootID: "A"}, {At: at(10), BootID: "B"}}
	for _, tc := range []struct {
		name   string
		nr     NodeRecord
		wantOK bool
		want   string
	}{
		{"no claims", NodeRecord{}, true, "no status entry claimed"},
		{"claim after the load", NodeRecord{Claims: []StatusClaim{claim("A", 3, 0)}, ModuleSeen: map[string]time.Time{"A/dummy": at(2)}, Truths: truths}, true, "1 status claims"},
		{"claim just ahead of the truth, within the slack", NodeRecord{Claims: []StatusClaim{claim("A", 3, 0)}, ModuleSeen: map[string]time.Time{"A/dummy": at(3.9)}, Truths: truths}, true, "none ahead"},
		{"truth late, the kernel's stamp before the claim", NodeRecord{Claims: []StatusClaim{claim("A", 3, 0)},
			ModuleSeen: map[string]time.Time{"A/dummy": at(6)}, KernelLoaded: map[string]time.Time{"A/dummy": at(2.5)}, Truths: truths}, true, "none ahead"},
		{"claim 3 s ahead of the load", NodeRecord{Claims: []StatusClaim{claim("A", 3, 0)},
			ModuleSeen: map[string]time.Time{"A/dummy": at(6)}, KernelLoaded: map[string]time.Time{"A/dummy": at(6)}, Truths: truths}, false, "3s before the kernel loaded it"},
		{"claim ahead, the observer saw the load within the slack", NodeRecord{Claims: []StatusClaim{claim("A", 3, 0)},
			ModuleSeen: map[string]time.Time{"A/dummy": at(3.5)}, KernelLoaded: map[string]time.Time{"A/dummy": at(6)}, Truths: truths}, true, "none ahead"},
		{"never loaded in the claimed boot, node still in it", NodeRecord{Claims: []StatusClaim{claim("A", 3, 0)}, Truths: truths}, false, "never did"},
		{"never loaded, claim gone within the slack", NodeRecord{Claims: []StatusClaim{claim("A", 3, 3.5)}, Truths: truths}, true, ""},
		{"stale claim of an earlier boot", NodeRecord{Claims: []StatusClaim{claim("A", 12, 0)}, Truths: truths}, true, ""},
		{"claim of a boot the node reached later, ahead of its load", NodeRecord{Claims: []StatusClaim{claim("B", 10, 0)},
			ModuleSeen: map[string]time.Time{"B/dummy": at(14)}, Truths: truths}, false, "4s before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeStatusAfterLoad(Record{Nodes: map[string]NodeRecord{"n1": tc.nr}}, at(20))
			if got.Name != AssertStatusAfterLoad || got.OK != tc.wantOK || !strings.Contains(got.Message, tc.want) {
				t.Errorf("judgeStatusAfterLoad = %+v, want ok %v and a message with %q", got, tc.wantOK, tc.want)
			}
		})
	}
}

package scenarios

import (
	"testing"
	"time"
)

func TestMissDeadline(t *testing.T) {
	for _, tc := range []struct {
		name               string
		timeout, firstLoad time.Duration
		want               time.Duration
	}{
		{"not measured yet: the full timeout", 30 * time.Second, 0, 30 * time.Second},
		{"fast first load: the floor", 30 * time.Second, 200 * time.Millisecond, MissFloor},
		{"margin times the first load", 30 * time.Second, 1200 * time.Millisecond, 12 * time.Second},
		{"never past the wait's timeout", 30 * time.Second, 4 * time.Second, 30 * time.Second},
		{"a timeout under the floor stays", 3 * time.Second, 100 * time.Millisecond, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := missDeadline(tc.timeout, tc.firstLoad); got != tc.want {
				t.Errorf("missDeadline(%s, %s) = %s, want %s", tc.timeout, tc.firstLoad, got, tc.want)
			}
		})
	}
}

func TestExpectsReloadMiss(t *testing.T) {
	for _, tc := range []struct {
		exp  Expectation
		want bool
	}{
		{Expectation{Outcome: Fail, Assertions: []string{AssertReload}}, true},
		{Expectation{Outcome: Fail, Assertions: []string{AssertNoExtraWork, AssertReload}}, true},
		// Any failure, or a failure through another assertion: the full
		// deadline (the reload is not what is expected to fail).
		{Expectation{Outcome: Fail}, false},
		{Expectation{Outcome: Fail, Assertions: []string{AssertNoExtraWork}}, false},
		{Expectation{Outcome: Pass}, false},
	} {
		if got := expectsReloadMiss(tc.exp); got != tc.want {
			t.Errorf("expectsReloadMiss(%+v) = %v, want %v", tc.exp, got, tc.want)
		}
	}
}

// A case's reload waits use the miss deadline only for a subject expected
// to miss reloads, and only once its first load was measured.
func TestReloadTimeout(t *testing.T) {
	base := time.Now()
	for _, tc := range []struct {
		name     string
		miss     bool
		loadedAt time.Duration // after subjectAt; 0: no load yet
		want     time.Duration
	}{
		{"passing subject keeps the deadline", false, 300 * time.Millisecond, 30 * time.Second},
		{"before the first load: the deadline", true, 0, 30 * time.Second},
		{"after a fast first load: the floor", true, 300 * time.Millisecond, MissFloor},
		{"after a slow first load: 10x", true, 2 * time.Second, 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &caseRun{missReload: tc.miss, subjectAt: base}
			if tc.loadedAt > 0 {
				c.loaded(base.Add(tc.loadedAt))
				c.loaded(base.Add(time.Hour)) // only the first load counts
			}
			got, why := c.reloadTimeout(30 * time.Second)
			if got != tc.want {
				t.Errorf("reloadTimeout = %s, want %s", got, tc.want)
			}
			if (why != "") != (got != 30*time.Second) {
				t.Errorf("reason %q for timeout %s", why, got)
			}
		})
	}
}

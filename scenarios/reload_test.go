package scenarios

import (
	"testing"
	"time"
)

func TestReloadBoundResolve(t *testing.T) {
	grace := 10 * time.Second
	for _, tc := range []struct {
		name string
		b    ReloadBound
		load time.Duration
		want time.Duration
	}{
		{"not measured yet: the floor", ReloadBound{}, 0, DefaultReloadAtLeast},
		{"fast first load: the floor", ReloadBound{}, 200 * time.Millisecond, DefaultReloadAtLeast},
		{"ten times the slowest load", ReloadBound{}, 2 * time.Second, 20 * time.Second},
		{"not capped by any deadline", ReloadBound{}, 4 * time.Second, 40 * time.Second},
		{"the scenario's own factor", ReloadBound{FirstLoadTimes: 3, AtLeast: Duration{Abs: time.Second, Set: true}}, 2 * time.Second, 6 * time.Second},
		{"the scenario's own floor, in g", ReloadBound{AtLeast: Duration{Grace: 0.2, Set: true}}, 10 * time.Millisecond, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.b.Resolve(tc.load, grace); got != tc.want {
				t.Errorf("Resolve(%s) = %s, want %s", tc.load, got, tc.want)
			}
		})
	}
	if got, want := (ReloadBound{}).String(), "10 x the slowest load measured, at least 15s"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

// TestReloadBoundResultFormat: what the report says of a case's service
// level, measured or fixed.
func TestReloadBoundResultFormat(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    ReloadBoundResult
		want string
	}{
		{"measured", ReloadBoundResult{Rule: "10 x the slowest load measured, at least 15s", FirstLoadMS: 520, BoundMS: 15000, DeadlineMS: 30000},
			"15s (10 x the slowest load measured, at least 15s: first load 520ms); missed after the deadline 30s"},
		{"grown by a reload", ReloadBoundResult{Rule: "r", FirstLoadMS: 500, SlowestReloadMS: 2000, BoundMS: 20000, DeadlineMS: 30000},
			"20s (r: first load 500ms, slowest reload 2s); missed after the deadline 30s"},
		{"not measured", ReloadBoundResult{Rule: "r", FirstLoadMS: -1, BoundMS: 15000, DeadlineMS: 30000},
			"15s (r; no first load was measured before a reboot); missed after the deadline 30s"},
		{"fixed", ReloadBoundResult{Rule: "8.0 s", FixedBy: "--reload-slo", FirstLoadMS: 500, BoundMS: 8000, DeadlineMS: 30000},
			"8s (set by --reload-slo); missed after the deadline 30s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.b.String(); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

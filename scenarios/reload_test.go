package scenarios

import (
	"testing"
	"time"
)

func TestReloadBoundResolve(t *testing.T) {
	grace := 10 * time.Second
	for _, tc := range []struct {
		name               string
		b                  ReloadBound
		firstLoad, timeout time.Duration
		want               time.Duration
	}{
		{"not measured yet: the full timeout", ReloadBound{}, 0, 30 * time.Second, 30 * time.Second},
		{"fast first load: the floor", ReloadBound{}, 200 * time.Millisecond, 30 * time.Second, DefaultReloadAtLeast},
		{"ten times the first load", ReloadBound{}, 1200 * time.Millisecond, 30 * time.Second, 12 * time.Second},
		{"never past the wait's timeout", ReloadBound{}, 4 * time.Second, 30 * time.Second, 30 * time.Second},
		{"a timeout under the floor stays", ReloadBound{}, 100 * time.Millisecond, 3 * time.Second, 3 * time.Second},
		{"the scenario's own factor", ReloadBound{FirstLoadTimes: 3}, 2 * time.Second, 30 * time.Second, 6 * time.Second},
		{"the scenario's own floor, in g", ReloadBound{AtLeast: Duration{Grace: 0.2, Set: true}}, 10 * time.Millisecond, 30 * time.Second, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.b.Resolve(tc.firstLoad, tc.timeout, grace); got != tc.want {
				t.Errorf("Resolve(%s, %s) = %s, want %s", tc.firstLoad, tc.timeout, got, tc.want)
			}
		})
	}
	if got, want := (ReloadBound{}).String(), "10 x the slowest load measured, at least 5s"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

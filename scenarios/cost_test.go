package scenarios

import (
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestCostOrdersLongestFirst(t *testing.T) {
	const grace = 10 * time.Second
	dec := func(name, actions string, nodes int) *Scenario {
		t.Helper()
		s, err := Decode(name+".yaml", []byte("apiVersion: bootproof.dev/v1alpha1\nkind: Scenario\nname: "+name+"\nnodes: "+strconv.Itoa(nodes)+"\nmodules: [{name: dummy}]\nexpect: {bootid: pass}\nactions:\n"+actions))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	short := dec("short", "  - wait-reloaded: {}\n  - reboot: {downtime: 0.1g}\n  - wait-reloaded: {}\n", 1)
	slow := dec("slow", "  - wait-reloaded: {}\n  - reboot: {downtime: 3g}\n  - wait-reloaded: {}\n", 1)
	storm := dec("storm", "  - wait-reloaded: {}\n  - reboot: {on: all, downtime: 0.3g, stagger: 1s}\n  - wait-reloaded: {}\n", 50)
	sleepy := dec("sleepy", "  - wait-reloaded: {}\n  - sleep: {duration: 20s}\n", 1)
	// Slow worker pods: the cost is the same.
	race := dec("race", "  - wait-worker: {action: Load, state: succeeded}\n  - reboot: {downtime: 0.3g}\n  - wait-reloaded: {}\n", 1)
	race.PodLatency = Duration{Abs: 2 * time.Second, Set: true}
	// A missed reload costs the deadline: the wait runs until then.
	miss := 30 * time.Second
	for _, tc := range []struct {
		s    *Scenario
		want time.Duration
	}{
		{short, 1*time.Second + 2*perWait + 3*perNode + miss},
		{slow, 30*time.Second + 2*perWait + 3*perNode + miss},
		{storm, 3*time.Second + 49*time.Second + 2*perWait + 3*50*perNode + miss},
		{sleepy, 20*time.Second + perWait + 2*perNode + miss},
		{race, 3*time.Second + 2*perWait + 3*perNode + miss},
	} {
		if got := tc.s.Cost(grace); got != tc.want {
			t.Errorf("%s: Cost = %s, want %s", tc.s.Name, got, tc.want)
		}
	}
	got := ByCost([]*Scenario{short, slow, storm, sleepy, race}, grace)
	if want := []int{2, 1, 3, 4, 0}; !slices.Equal(got, want) {
		t.Errorf("ByCost = %v, want %v (storm, slow, sleepy, race, short)", got, want)
	}
}

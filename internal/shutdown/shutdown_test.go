package shutdown

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	var ran atomic.Int32
	Register("quick", func() { ran.Add(1) })
	gone := Register("released", func() { t.Error("an unregistered cleanup ran") })
	gone()
	Register("slow", func() { time.Sleep(time.Minute) })
	Register("panics", func() { panic("boom") })
	start := time.Now()
	unfinished := Run(200 * time.Millisecond)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %s with a 200ms bound", d)
	}
	slices.Sort(unfinished)
	if !slices.Equal(unfinished, []string{"panics", "slow"}) {
		t.Errorf("unfinished %v", unfinished)
	}
	if ran.Load() != 1 {
		t.Errorf("the quick cleanup ran %d times", ran.Load())
	}
	if got := Run(time.Second); len(got) != 0 || ran.Load() != 1 {
		t.Errorf("a second Run ran cleanups again: %v, %d", got, ran.Load())
	}
}

package trace

import (
	"testing"
	"time"
)

func TestDisruptionEvent(t *testing.T) {
	for _, tc := range []struct {
		phase      Phase
		downtime   time.Duration
		disruption bool
		wantMS     int64
		detail     string
	}{
		{PhaseStart, 2500 * time.Millisecond, true, 2500, "reboot (downtime 2.5s)"},
		{PhaseDone, 0, false, 0, "reboot done"},
	} {
		e := DisruptionEvent("n0", "reboot", tc.phase, tc.downtime)
		if e.Kind != KindAction || e.Node != "n0" || e.Action != "reboot" || e.Phase != tc.phase {
			t.Errorf("%s: %+v", tc.phase, e)
		}
		if e.Disruption() != tc.disruption || e.DowntimeMS != tc.wantMS || e.Detail != tc.detail {
			t.Errorf("%s: disruption %v downtime %d detail %q", tc.phase, e.Disruption(), e.DowntimeMS, e.Detail)
		}
	}
	if (Event{Kind: KindPod, Phase: PhaseStart}).Disruption() {
		t.Error("a pod event is no disruption")
	}
}

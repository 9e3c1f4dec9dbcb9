package vmprovision_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/vmprovision"
	"github.com/bootproof/bootproof/vmprovision/agentapi"
)

func TestPlaceBootTimes(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	sent := time.Date(2026, 12, 1, 13, 0, 10, 0, time.UTC)
	var tl vmprovision.BootTimeline
	// The answer left the guest at uptime 6s, 20ms after the request
	// was sent (40ms round trip).
	vmprovision.PlaceBootTimes(&tl, agentapi.BootTimes{Uptime: ms(6000), Init: ms(2000), AgentMain: ms(2500), KubeletStart: ms(3000)}, sent, sent.Add(ms(40)))
	zero := sent.Add(ms(20 - 6000))
	for _, c := range []struct {
		name      string
		got, want time.Time
	}{
		{"kernel start", tl.KernelStart, zero},
		{"init", tl.Init, zero.Add(ms(2000))},
		{"agent main", tl.AgentMain, zero.Add(ms(2500))},
		{"kubelet start", tl.KubeletStart, zero.Add(ms(3000))},
		{"registered (not reported)", tl.Registered, time.Time{}},
	} {
		if !c.got.Equal(c.want) {
			t.Errorf("%s at %s, want %s", c.name, c.got.Format(time.RFC3339Nano), c.want.Format(time.RFC3339Nano))
		}
	}
	if tl.Uncertainty != ms(20) {
		t.Errorf("uncertainty %s, want 20ms", tl.Uncertainty)
	}
}

func TestBootTimelinePhases(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	t0 := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	at := func(n int) time.Time { return t0.Add(ms(n)) }
	full := vmprovision.BootTimeline{Node: "n0", NewBootID: "b", Reset: at(0), KernelStart: at(1200), Init: at(3000), KubeletStart: at(4500), Uncertainty: ms(5)}
	with := func(f func(*vmprovision.BootTimeline)) vmprovision.BootTimeline {
		tl := full
		f(&tl)
		return tl
	}
	for _, tc := range []struct {
		name            string
		tl              vmprovision.BootTimeline
		visible, loaded time.Time
		want            []time.Duration // per BootPhaseNames
		err             string
	}{
		{name: "in order", tl: full, visible: at(6000), loaded: at(6800), want: []time.Duration{ms(1200), ms(1800), ms(1500), ms(1500), ms(800)}},
		{name: "within uncertainty counts as zero", tl: with(func(t *vmprovision.BootTimeline) { t.KernelStart = at(-3) }), visible: at(6000), loaded: at(6800),
			want: []time.Duration{0, ms(3003), ms(1500), ms(1500), ms(800)}},
		{name: "out of order", tl: with(func(t *vmprovision.BootTimeline) { t.KubeletStart = at(6100) }), visible: at(6000), loaded: at(6800), err: "boot visible at"},
		{name: "no init", tl: with(func(t *vmprovision.BootTimeline) { t.Init = time.Time{} }), visible: at(6000), loaded: at(6800), err: "/init is not known"},
		{name: "not loaded", tl: full, visible: at(6000), err: "module loaded is not known"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.tl.Phases(tc.visible, tc.loaded)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, %v; want error %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(vmprovision.BootPhaseNames) {
				t.Fatalf("got %d phases, want %d", len(got), len(vmprovision.BootPhaseNames))
			}
			for i, p := range got {
				if p.Name != vmprovision.BootPhaseNames[i] || p.Duration != tc.want[i] {
					t.Errorf("phase %d = %s %s, want %s %s", i, p.Name, p.Duration, vmprovision.BootPhaseNames[i], tc.want[i])
				}
			}
		})
	}
}

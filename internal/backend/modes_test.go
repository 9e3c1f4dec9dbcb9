package backend

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/vmprovision"
)

// TestUnknownRebootModeIsRefused adds a reboot mode that no backend
// implements (as a new entry of nodeapi's vocabulary is until a backend
// lists it): neither the simulated nor the VM node set lists it, a case
// asking for it is skipped with the reason, and each one's Reboot refuses
// it before touching a node rather than doing some other reboot.
func TestUnknownRebootModeIsRefused(t *testing.T) {
	const hibernate nodeapi.RebootMode = "hibernate"
	s := &scenarios.Scenario{Name: "hibernate-0.5g", Actions: []scenarios.Action{
		{Kind: scenarios.ActWaitReloaded},
		{Kind: scenarios.ActReboot, Mode: hibernate, Downtime: scenarios.Duration{Abs: 5 * time.Second, Set: true}, Line: 12},
	}}
	for _, tc := range []struct {
		backend string
		nodes   nodeapi.NodeSet
		lists   []nodeapi.RebootMode
	}{
		{"fake", &fakeNodes{}, FakeRebootModes},
		{"libvirt", &vmprovision.NodeSet{}, vmprovision.RebootModeNames},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			if got := nodeapi.ModesOf(tc.nodes); !slices.Equal(got, tc.lists) || slices.Contains(got, hibernate) {
				t.Errorf("RebootModes = %v, want its own list %v", got, tc.lists)
			}
			want := "backend " + tc.backend + " cannot reboot in mode hibernate (implemented: reset, guest, panic, power-cycle)"
			if got := scenarios.NodeSkipReason(s, tc.backend, tc.nodes, 10*time.Second); got != want {
				t.Errorf("skip reason %q, want %q", got, want)
			}
			_, err := tc.nodes.Reboot(context.Background(), "n0", nodeapi.RebootRequest{Mode: hibernate, Downtime: 5 * time.Second})
			var um *nodeapi.UnsupportedModeError
			if !errors.As(err, &um) || um.Mode != hibernate {
				t.Errorf("Reboot(hibernate) = %v, want an UnsupportedModeError", err)
			}
			// Every mode it lists runs; reset is the default.
			for _, m := range append([]nodeapi.RebootMode{""}, tc.lists...) {
				s := &scenarios.Scenario{Name: "m", Actions: []scenarios.Action{{Kind: scenarios.ActReboot, Mode: m, Downtime: scenarios.Duration{Abs: time.Second, Set: true}}}}
				if got := scenarios.NodeSkipReason(s, tc.backend, tc.nodes, 10*time.Second); got != "" {
					t.Errorf("mode %q skipped: %s", m, got)
				}
			}
		})
	}
}

package nodeapi_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/bootproof/bootproof/nodeapi"
)

type resetOnly struct{}

func (resetOnly) Reboot(context.Context, string, nodeapi.RebootRequest) (nodeapi.RebootOutcome, error) {
	return nodeapi.RebootOutcome{}, nil
}
func (resetOnly) Close() error { return nil }

type listing struct {
	resetOnly
	modes []nodeapi.RebootMode
}

func (l listing) RebootModes() []nodeapi.RebootMode { return l.modes }

// A node set implements only the modes it lists; without a list, only
// reset. Anything else is refused with the modes it has.
func TestCheckMode(t *testing.T) {
	vm := listing{modes: []nodeapi.RebootMode{nodeapi.RebootReset, nodeapi.RebootPanic}}
	for _, tc := range []struct {
		name  string
		ns    nodeapi.NodeSet
		mode  nodeapi.RebootMode
		ok    bool
		modes []nodeapi.RebootMode
	}{
		{"the default mode is reset", resetOnly{}, "", true, nil},
		{"reset without a list", resetOnly{}, nodeapi.RebootReset, true, nil},
		{"another mode without a list", resetOnly{}, nodeapi.RebootGuest, false, []nodeapi.RebootMode{nodeapi.RebootReset}},
		{"a listed mode", vm, nodeapi.RebootPanic, true, nil},
		{"a mode of the vocabulary not listed", vm, nodeapi.RebootPowerCycle, false, vm.modes},
		{"a mode nobody knows", vm, "hibernate", false, vm.modes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := nodeapi.CheckMode(tc.ns, tc.mode)
			var um *nodeapi.UnsupportedModeError
			switch {
			case tc.ok && err != nil:
				t.Errorf("CheckMode = %v", err)
			case !tc.ok && (!errors.As(err, &um) || um.Mode != tc.mode.OrReset() || !slices.Equal(um.Supported, tc.modes)):
				t.Errorf("CheckMode = %v, want an UnsupportedModeError listing %v", err, tc.modes)
			}
		})
	}
	if got := (&nodeapi.UnsupportedModeError{Mode: "hibernate", Supported: vm.modes}).Error(); got != "cannot reboot in mode hibernate (implemented: reset, panic)" {
		t.Errorf("message %q", got)
	}
}

func TestTimingProfiles(t *testing.T) {
	for _, p := range nodeapi.TimingProfiles() {
		if !p.Valid() {
			t.Errorf("%s is listed but not valid", p)
		}
	}
	for _, p := range []nodeapi.TimingProfile{"", "slow", "Fast"} {
		if p.Valid() {
			t.Errorf("%q is valid", p)
		}
	}
	if got := nodeapi.JoinTimingProfiles(nodeapi.TimingProfiles()); got != "fast, kubelet-defaults" {
		t.Errorf("JoinTimingProfiles = %q", got)
	}
}

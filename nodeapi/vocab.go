package nodeapi

import (
	"fmt"
	"slices"
	"strings"
)

// RebootMode is how a node reboots. Every backend supports RebootReset; a
// NodeSet that supports more says so through the RebootModes capability.
type RebootMode string

// Reboot modes.
const (
	// RebootReset is a hard reset (the default).
	RebootReset RebootMode = "reset"
	// RebootGuest is a reboot the guest asks for (reboot(2)).
	RebootGuest RebootMode = "guest"
	// RebootPanic is a kernel panic that reboots (panic=1).
	RebootPanic RebootMode = "panic"
	// RebootPowerCycle is power off, stay off for the downtime, power on.
	RebootPowerCycle RebootMode = "power-cycle"
)

// AllRebootModes lists every reboot mode a scenario may ask for. A new
// mode added here is implemented by no backend until one lists it in its
// RebootModes: cases that use it are skipped there.
func AllRebootModes() []RebootMode {
	return []RebootMode{RebootReset, RebootGuest, RebootPanic, RebootPowerCycle}
}

// Valid reports whether m is a known mode; the empty mode means reset.
func (m RebootMode) Valid() bool { return m == "" || slices.Contains(AllRebootModes(), m) }

// OrReset is m, or RebootReset for the empty mode.
func (m RebootMode) OrReset() RebootMode {
	if m == "" {
		return RebootReset
	}
	return m
}

// JoinRebootModes lists modes as "reset, guest".
func JoinRebootModes(ms []RebootMode) string { return join(ms) }

// join lists values of a vocabulary for messages ("a, b").
func join[T ~string](vs []T) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// UnsupportedModeError is a reboot in a mode a node set does not
// implement.
type UnsupportedModeError struct {
	Mode RebootMode
	// Supported are the modes the node set implements.
	Supported []RebootMode
}

func (e *UnsupportedModeError) Error() string {
	return fmt.Sprintf("cannot reboot in mode %s (implemented: %s)", e.Mode, JoinRebootModes(e.Supported))
}

// ModesOf lists the modes ns implements: its RebootModes, else only
// RebootReset.
func ModesOf(ns NodeSet) []RebootMode {
	if rm, ok := ns.(RebootModes); ok {
		return rm.RebootModes()
	}
	return []RebootMode{RebootReset}
}

// CheckMode returns nil when ns implements mode m (empty: reset), else an
// *UnsupportedModeError.
func CheckMode(ns NodeSet, m RebootMode) error {
	return CheckModeIn(ModesOf(ns), m)
}

// CheckModeIn returns nil when m (empty: reset) is among modes, else an
// *UnsupportedModeError. A backend's Reboot calls it with its own list
// before anything else.
func CheckModeIn(modes []RebootMode, m RebootMode) error {
	if slices.Contains(modes, m.OrReset()) {
		return nil
	}
	return &UnsupportedModeError{Mode: m.OrReset(), Supported: slices.Clone(modes)}
}

// TimingProfile names the lightweight kubelet's clockwork: how often it
// renews its Lease and reports status, and how fast its pods start.
type TimingProfile string

// Timing profiles.
const (
	// TimingKubeletDefaults matches a real kubelet's defaults (Lease 40s
	// renewed every 10s, status every 10s, report every 5m).
	TimingKubeletDefaults TimingProfile = "kubelet-defaults"
	// TimingFast is kubelet-defaults about 5x quicker, for tests.
	TimingFast TimingProfile = "fast"
)

// TimingProfiles lists every timing profile, sorted.
func TimingProfiles() []TimingProfile { return []TimingProfile{TimingFast, TimingKubeletDefaults} }

// Valid reports whether p is a known timing profile.
func (p TimingProfile) Valid() bool { return slices.Contains(TimingProfiles(), p) }

// JoinTimingProfiles lists profiles for messages ("fast, kubelet-defaults").
func JoinTimingProfiles(ps []TimingProfile) string { return join(ps) }

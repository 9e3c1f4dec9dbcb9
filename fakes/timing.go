package fakes

import (
	"fmt"
	"time"

	"github.com/bootproof/bootproof/nodeapi"
)

// Timing is the lightweight kubelet's clockwork. The kubelet-defaults
// profile matches a real kubelet's defaults; others scale it.
type Timing struct {
	// LeaseDuration is the Lease's leaseDurationSeconds (kubelet: 40s).
	LeaseDuration time.Duration
	// RenewInterval is how often the Lease is renewed (kubelet: 25% of
	// the lease duration, 10s).
	RenewInterval time.Duration
	// RenewJitter is the fraction of RenewInterval added at random to each
	// wait (kubelet: 0.04).
	RenewJitter float64
	// StatusInterval is how often status is computed
	// (--node-status-update-frequency, 10s).
	StatusInterval time.Duration
	// ReportInterval is how often unchanged status is posted anyway
	// (nodeStatusReportFrequency, 5m).
	ReportInterval time.Duration
	// PodStartLatency is Pending -> Running for a pod.
	PodStartLatency time.Duration
	// ActionLatency is how long a worker action takes once Running (from
	// when the kubelet published Running).
	ActionLatency time.Duration
}

// TimingProfiles are the named profiles (nodeapi.TimingProfiles).
var TimingProfiles = map[nodeapi.TimingProfile]Timing{
	nodeapi.TimingKubeletDefaults: {
		LeaseDuration:   40 * time.Second,
		RenewInterval:   10 * time.Second,
		RenewJitter:     0.04,
		StatusInterval:  10 * time.Second,
		ReportInterval:  5 * time.Minute,
		PodStartLatency: time.Second,
		ActionLatency:   500 * time.Millisecond,
	},
	// fast is kubelet-defaults about 5x quicker, for tests.
	nodeapi.TimingFast: {
		LeaseDuration:   8 * time.Second,
		RenewInterval:   2 * time.Second,
		RenewJitter:     0.04,
		StatusInterval:  2 * time.Second,
		ReportInterval:  time.Minute,
		PodStartLatency: 100 * time.Millisecond,
		ActionLatency:   100 * time.Millisecond,
	},
}

// TimingProfile returns the named profile, or an error naming the accepted
// names.
func TimingProfile(name nodeapi.TimingProfile) (Timing, error) {
	t, ok := TimingProfiles[name]
	if !ok {
		return Timing{}, fmt.Errorf("unknown timing profile %q: accepted: %s", name, nodeapi.JoinTimingProfiles(nodeapi.TimingProfiles()))
	}
	return t, nil
}

// Scaled divides every interval by factor (factor 5 is five times quicker).
func (t Timing) Scaled(factor float64) Timing {
	s := func(d time.Duration) time.Duration { return time.Duration(float64(d) / factor) }
	return Timing{
		LeaseDuration: s(t.LeaseDuration), RenewInterval: s(t.RenewInterval), RenewJitter: t.RenewJitter,
		StatusInterval: s(t.StatusInterval), ReportInterval: s(t.ReportInterval),
		PodStartLatency: s(t.PodStartLatency), ActionLatency: s(t.ActionLatency),
	}
}

// Validate reports an interval that cannot work.
func (t Timing) Validate() error {
	switch {
	case t.LeaseDuration < time.Second:
		return fmt.Errorf("timing: lease duration %s: accepted: at least 1s", t.LeaseDuration)
	case t.RenewInterval <= 0 || t.RenewInterval >= t.LeaseDuration:
		return fmt.Errorf("timing: renew interval %s: accepted: positive and shorter than the lease duration %s", t.RenewInterval, t.LeaseDuration)
	case t.RenewJitter < 0 || t.RenewJitter > 1:
		return fmt.Errorf("timing: renew jitter %v: accepted: 0 to 1", t.RenewJitter)
	case t.StatusInterval <= 0:
		return fmt.Errorf("timing: status interval %s: accepted: positive", t.StatusInterval)
	case t.ReportInterval < t.StatusInterval:
		return fmt.Errorf("timing: report interval %s: accepted: at least the status interval %s", t.ReportInterval, t.StatusInterval)
	case t.PodStartLatency < 0 || t.ActionLatency < 0:
		return fmt.Errorf("timing: pod latencies must not be negative")
	}
	return nil
}

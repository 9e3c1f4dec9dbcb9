package vmprovision

import (
	"fmt"
	"time"

	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/vmprovision/agentapi"
)

// BootTimeline is one reboot of a VM node on the host's clock: when the
// host reset the domain, and when the guest reached the milestones its
// agent reports (agentapi.BootTimes), placed on the host's clock.
type BootTimeline struct {
	Node      string
	Mode      nodeapi.RebootMode
	OldBootID string
	NewBootID string
	// Reset is when the host reset the domain (asked the guest to
	// reboot or panic, destroyed it for a power cycle). A requested
	// downtime holds the domain after it: the firmware phase includes it.
	Reset time.Time
	// KernelStart is when the guest kernel started its clock (zero on
	// CLOCK_BOOTTIME); Init when it ran /init; AgentMain when the agent's
	// main function began; KubeletStart when the agent started its
	// kubelet; Registered when the kubelet's first status and Lease in
	// the new boot were accepted, as the guest saw it. A zero time was
	// not reported.
	KernelStart  time.Time
	Init         time.Time
	AgentMain    time.Time
	KubeletStart time.Time
	Registered   time.Time
	// Uncertainty bounds the error of placing the guest's clock on the
	// host's: half the round trip of the request whose answer did it.
	Uncertainty time.Duration
}

// PlaceBootTimes puts the guest milestones bt on the host's clock: the
// answer that carried bt was sent between sent and received (host
// clock), when the guest's clock read bt.Uptime. The guest's clock zero
// is placed at the midpoint minus Uptime.
func PlaceBootTimes(t *BootTimeline, bt agentapi.BootTimes, sent, received time.Time) {
	rtt := received.Sub(sent)
	zero := sent.Add(rtt / 2).Add(-bt.Uptime)
	at := func(d time.Duration) time.Time {
		if d <= 0 {
			return time.Time{}
		}
		return zero.Add(d)
	}
	t.KernelStart = zero
	t.Init, t.AgentMain, t.KubeletStart, t.Registered = at(bt.Init), at(bt.AgentMain), at(bt.KubeletStart), at(bt.Registered)
	t.Uncertainty = rtt / 2
}

// The boot phases of a reboot, in order; they add up to reset -> module
// loaded in the new boot.
const (
	// PhaseFirmware is reset -> the guest kernel starts its clock:
	// QEMU's reset, the firmware, loading and (for a bzImage)
	// decompressing the kernel, the kernel's earliest setup.
	PhaseFirmware = "firmware"
	// PhaseKernel is the kernel's clock starting -> it runs /init.
	PhaseKernel = "kernel"
	// PhaseAgentStart is /init -> the agent starts its kubelet: the Go
	// runtime's start, the boot modules, the network.
	PhaseAgentStart = "agent-start"
	// PhaseFirstHeartbeat is the kubelet's start -> the new boot ID is
	// visible in the API (the observer's watch).
	PhaseFirstHeartbeat = "first-heartbeat"
	// PhaseReload is the new boot ID visible -> the module is loaded
	// again in the new boot (kernel ground truth): the subject's work.
	PhaseReload = "reload"
)

// BootPhaseNames lists the phases in order.
var BootPhaseNames = []string{PhaseFirmware, PhaseKernel, PhaseAgentStart, PhaseFirstHeartbeat, PhaseReload}

// BootPhase is one phase of a reboot and how long it took.
type BootPhase struct {
	Name     string
	Duration time.Duration
}

// Phases splits the reboot from Reset to loaded into BootPhaseNames;
// visible is when the API showed the new boot ID, loaded when the module
// was loaded again (both on the host's clock). Each boundary must be
// known, and they must come in order (within Uncertainty, for the
// guest's milestones placed on the host's clock; such a phase counts as
// zero).
func (t BootTimeline) Phases(visible, loaded time.Time) ([]BootPhase, error) {
	bounds := []struct {
		name string
		at   time.Time
	}{{"reset", t.Reset}, {"kernel start", t.KernelStart}, {"/init", t.Init}, {"kubelet start", t.KubeletStart}, {"boot visible", visible}, {"module loaded", loaded}}
	for _, b := range bounds {
		if b.at.IsZero() {
			return nil, fmt.Errorf("node %s boot %s: %s is not known", t.Node, t.NewBootID, b.name)
		}
	}
	out := make([]BootPhase, 0, len(BootPhaseNames))
	for i, name := range BootPhaseNames {
		d := bounds[i+1].at.Sub(bounds[i].at)
		if d < 0 {
			if -d > t.Uncertainty {
				return nil, fmt.Errorf("node %s boot %s: %s at %s comes %s before %s (clock placement uncertainty %s)",
					t.Node, t.NewBootID, bounds[i+1].name, bounds[i+1].at.Format(time.RFC3339Nano), -d, bounds[i].name, t.Uncertainty)
			}
			d = 0
		}
		out = append(out, BootPhase{Name: name, Duration: d})
	}
	return out, nil
}

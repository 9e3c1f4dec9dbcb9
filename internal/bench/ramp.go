package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSteps reads a ramp's node counts, "1000,2000,3000": positive and
// strictly increasing.
func ParseSteps(s string) ([]int, error) {
	var steps []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("step %q: want a positive number of nodes", f)
		}
		if len(steps) > 0 && n <= steps[len(steps)-1] {
			return nil, fmt.Errorf("step %d after %d: want increasing node counts", n, steps[len(steps)-1])
		}
		steps = append(steps, n)
	}
	return steps, nil
}

// Limits are the conditions that end a ramp: past any of them the machine
// no longer holds the fleet.
type Limits struct {
	// Cores is the number of CPUs of the machine.
	Cores int
	// CPUFraction is the share of the machine's CPU that the control
	// plane and the fleet together may use (0.9: 90% of Cores).
	CPUFraction float64
	// LatenessP99Ms is the highest lease-renewal lateness p99 allowed, in ms.
	LatenessP99Ms float64
	// MutatingP99 is the highest p99 of kube-apiserver's mutating requests
	// allowed, in seconds (Kubernetes' scalability SLO: 1s).
	MutatingP99 float64
}

// Step is what a ramp measured at one node count.
type Step struct {
	Nodes int
	// Ready is false when not every node became Ready in time.
	Ready bool
	// Restarted says which control-plane process restarted meanwhile, and
	// why ("" when none did).
	Restarted string
	// FleetCPU and PlaneCPU are CPU s/min over the window.
	FleetCPU, PlaneCPU float64
	// NotReady counts Node updates with Ready not True in the window.
	NotReady int
	// Renewals counts Lease renewals in the window.
	Renewals      int
	LatenessP99Ms float64
	// MutatingP99 is kube-apiserver's mutating-request p99 in seconds.
	MutatingP99 float64
}

// Verdict returns why the machine does not hold step's fleet, or "" when
// it does: the first of not all Ready, a control-plane restart, false
// NotReady, no renewals seen, CPU saturated, lease lateness or API latency
// beyond l.
func (l Limits) Verdict(s Step) string {
	budget := l.CPUFraction * float64(l.Cores) * 60
	switch {
	case !s.Ready:
		return fmt.Sprintf("not all %d nodes Ready in time", s.Nodes)
	case s.Restarted != "":
		return "control plane restarted: " + s.Restarted
	case s.NotReady > 0:
		return fmt.Sprintf("false NotReady: %d Node updates with Ready not True", s.NotReady)
	case s.Renewals == 0:
		return "no lease renewal observed in the window"
	case s.PlaneCPU+s.FleetCPU >= budget:
		return fmt.Sprintf("CPU saturated: control plane %.1f + fleet %.1f CPU s/min >= %.0f%% of %d cores (%.0f CPU s/min)",
			s.PlaneCPU, s.FleetCPU, l.CPUFraction*100, l.Cores, budget)
	case s.LatenessP99Ms > l.LatenessP99Ms:
		return fmt.Sprintf("lease-renewal lateness p99 %.0f ms > %.0f ms", s.LatenessP99Ms, l.LatenessP99Ms)
	case s.MutatingP99 > l.MutatingP99:
		return fmt.Sprintf("kube-apiserver mutating-request p99 %.2f s > %.2f s", s.MutatingP99, l.MutatingP99)
	}
	return ""
}

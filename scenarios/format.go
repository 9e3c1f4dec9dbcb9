package scenarios

import (
	"fmt"
	"slices"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/scenarios/fileformat"
	"go.yaml.in/yaml/v3"
)

// Scenario is one reboot scenario: nodes, their modules, a timeline of
// actions and the verdict expected of each subject.
type Scenario struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Labels      []string `yaml:"labels"`
	// Nodes is how many nodes the scenario runs on.
	Nodes int `yaml:"nodes"`
	// Modules are in every node's NodeModulesConfig at the start.
	Modules []Module `yaml:"modules"`
	// Timing is the kubelet timing profile: fast or kubelet-defaults.
	Timing nodeapi.TimingProfile `yaml:"timing"`
	// PodLatency overrides the simulated worker's Pending->Running and
	// Running->done latencies (for scenarios that act while a load runs).
	PodLatency Duration `yaml:"podLatency"`
	// Precondition is what the scenario claims about Ready: "fast" (Ready
	// never leaves True), "slow" (Ready leaves True after a reboot) or
	// "recorded" (observed and reported, not required).
	Precondition Precondition `yaml:"precondition"`
	// Deadline bounds every wait-reloaded; default 30s.
	Deadline Duration `yaml:"deadline"`
	// ReloadBound is the rule of the reload service level (a reload
	// later than it is late: reload-slo), the same for every subject that
	// sets no level of its own; default {firstLoadTimes: 10, atLeast:
	// 15s}. It never ends a wait: Deadline does.
	ReloadBound ReloadBound `yaml:"reloadBound"`
	// Expect is the outcome each subject should get: pass, fail, or
	// fail through named assertions (fail:reload).
	Expect map[string]Expectation `yaml:"expect"`
	// Actions run in order.
	Actions []Action `yaml:"-"`

	// Source is the file the scenario came from.
	Source string `yaml:"-"`
	// Warnings are what Decode found deprecated in the file (no
	// apiVersion and kind): each names the file and says what to change.
	// A command prints them on stderr.
	Warnings []string `yaml:"-"`
}

// Module is a kernel module in a node's NodeModulesConfig.
type Module struct {
	// Name is the NMC entry name.
	Name string `yaml:"name"`
	// ModuleName is modprobe's name; default Name.
	ModuleName string `yaml:"moduleName"`
	// LoadingOrder is modprobe.modulesLoadingOrder.
	LoadingOrder []string `yaml:"loadingOrder"`

	// imageRevision counts the update-module-image actions applied to
	// the module (its config's containerImage, see ContainerImage).
	imageRevision int
}

// ContainerImage is the image the engine writes into the module's config
// for a node running kernel: a new one after each update-module-image
// (a new build of the driver).
func (m Module) ContainerImage(kernel string) string {
	img := "example.invalid/bootproof/" + m.Name + ":" + kernel
	if m.imageRevision > 0 {
		img += fmt.Sprintf("-r%d", m.imageRevision)
	}
	return img
}

// PausesSubject reports whether the timeline stops or restarts the
// subject (pause-subject, restart-subject). A subject that several cases
// share must run such a case alone.
func (s *Scenario) PausesSubject() bool {
	return slices.ContainsFunc(s.Actions, func(a Action) bool {
		return a.Kind == ActPauseSubject || a.Kind == ActRestartSubject
	})
}

// ControlsInterleaving reports whether the timeline orders the subject
// against the nodes deterministically instead of leaving it to timing:
// it stops, resumes or restarts the subject (pause-subject,
// resume-subject, restart-subject), so a disruption falls while the
// subject cannot act, or it waits for a worker pod to reach a state
// (wait-worker) before it goes on, so a disruption falls at a known
// point of a load. A defect that only such an order exposes is caught
// there every time; elsewhere only when the timing happens to line up.
func (s *Scenario) ControlsInterleaving() bool {
	return slices.ContainsFunc(s.Actions, func(a Action) bool {
		switch a.Kind {
		case ActPauseSubject, ActResumeSubject, ActRestartSubject, ActWaitWorker:
			return true
		}
		return false
	})
}

// Action is one step of a scenario, written as a one-key mapping:
//
//   - reboot: {on: all, downtime: 0.5g, startup: ready}
type Action struct {
	Kind ActionKind
	// On targets nodes: "all" (default), an index "0", or a list "0,2".
	On Target
	// Mode is the reboot mode (reset, guest, panic, power-cycle); default reset.
	Mode nodeapi.RebootMode
	// Downtime of a reboot, kubelet restart or subject restart.
	Downtime Duration
	// Startup: "ready" or "blip:<duration>".
	Startup Startup
	// KernelVersion boots a new kernel version.
	KernelVersion string
	// Stagger spaces the targeted nodes' starts; 0 means all at once.
	Stagger Duration
	// Wait (reboot) waits until every targeted node is back; default true.
	Wait bool
	// Duration of a network blip or a sleep.
	Duration Duration
	// Timeout of a wait; default the scenario's Deadline.
	Timeout Duration
	// Module, WorkerAction, State select worker pods (wait-worker) and
	// name the module added or removed.
	Module       string
	ModuleName   string
	LoadingOrder []string
	WorkerAction string
	State        string
	// Writes are the subject's writes refuse-writes refuses: "pods" (its
	// worker pods' creates and updates), "pod-deletes" (the delete that
	// begins a worker pod's deletion), "status" (its NodeModulesConfig
	// status); default all.
	Writes []string
	// Count is how many worker pods reject-pods has the node's kubelet
	// reject at admission.
	Count int

	Line int
}

// Target selects nodes by index.
type Target struct {
	All     bool
	Indexes []int
}

// Nodes resolves the target against n nodes.
func (t Target) Nodes(n int) []int {
	if t.All || len(t.Indexes) == 0 {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	return slices.Clone(t.Indexes)
}

// Startup is the kubelet's startup behaviour after a reboot.
type Startup struct {
	NotReadyFor Duration
}

// Decode reads one scenario file from YAML, strictly: unknown fields,
// wrong types and impossible values are errors naming file, line and
// field. The file opens with apiVersion (contract.APIVersions) and kind
// Scenario; one without both is read with a deprecation warning in
// Scenario.Warnings (see fileformat.DecodeVersioned).
func Decode(file string, data []byte) (*Scenario, error) {
	var raw struct {
		fileformat.Header `yaml:",inline"`
		Scenario          `yaml:",inline"`
		Actions           []yaml.Node `yaml:"actions"`
	}
	doc, warnings, err := fileformat.DecodeVersioned(file, data, contract.KindScenario, &raw)
	if err != nil {
		return nil, err
	}
	s := raw.Scenario
	s.Source = file
	s.Warnings = warnings
	for i := range raw.Actions {
		a, err := decodeAction(&raw.Actions[i])
		if err != nil {
			return nil, fileformat.WithFile(file, fmt.Sprintf("actions[%d]", i), err)
		}
		s.Actions = append(s.Actions, a)
	}
	if err := s.validate(doc); err != nil {
		return nil, fileformat.WithFile(file, "", err)
	}
	return &s, nil
}

package kmm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/bootproof/bootproof/kmm/controller"
	"github.com/bootproof/bootproof/kmm/detect"
	"github.com/bootproof/bootproof/kmm/variant"
)

// Defaults.
const (
	DefaultDetector                = detect.BootID
	DefaultRecordBootFrom          = string(controller.BootFromWorker)
	DefaultLeaderElectionNamespace = "default"
	DefaultLeaderElectionID        = "bootproof-kmm"
	// DefaultMaxConcurrentReconciles reconciles this many nodes at once.
	// A reconcile mostly waits for the API server, so after a reboot storm
	// more workers overlap those waits instead of queueing the nodes.
	DefaultMaxConcurrentReconciles = 64
	// DefaultQPS and DefaultBurst bound the reconciler's API requests per
	// second (per resource, as client-go limits each REST client). The
	// client-go default of 5 (burst 10) would hold 100 rebooted nodes'
	// loader pods back for tens of seconds: each reload costs about three
	// pod writes and a read and a write of the NodeModulesConfig.
	DefaultQPS   = 100
	DefaultBurst = 300
	// DefaultMetricsBindAddress "0" turns the metrics endpoint off.
	DefaultMetricsBindAddress = "0"
	// MaxReplicas bounds Options.Replicas.
	MaxReplicas = 5
)

// Options configure the reconciler's manager. The zero value is usable:
// Default fills every unset field. Each field names the flag of 'bootproof
// kmm' that sets it.
type Options struct {
	// Detector is the reboot detection strategy (--detector): "bootid"
	// (default) or "legacy", the negative control that misses fast reboots.
	Detector string
	// RecordBootFrom says which boot a finished load is recorded in
	// (--record-boot-from): "worker" (default) takes it from the worker's
	// termination message, falling back to the node's current boot ID;
	// "node" always takes the node's boot ID when the result is synced:
	// a load that ran in boot A and is synced after a reboot into B is
	// recorded in B, so the module looks loaded in B but is not ("Module
	// Ready, lsmod empty"; the catalog's reboot-after-load-before-sync).
	// It is kept to show that bug.
	RecordBootFrom string
	// WorkerNamespaces restricts the pod cache to these namespaces
	// (--worker-namespace). Empty means all namespaces, which needs the
	// worker pod permissions cluster-wide.
	WorkerNamespaces []string
	// Selector, when set, restricts the reconciler to the Nodes and
	// NodeModulesConfigs carrying these labels (--selector), so several
	// reconcilers can share a cluster, one per set of nodes.
	Selector map[string]string
	// LeaderElection turns leader election on (--leader-elect); 'bootproof
	// kmm' turns it on by default, in-process use leaves it off.
	LeaderElection bool
	// LeaderElectionNamespace holds the leader-election Lease
	// (--leader-election-namespace).
	LeaderElectionNamespace string
	// LeaderElectionID is the Lease name (--leader-election-id).
	LeaderElectionID string
	// KeepLeaderLease keeps the leader-election Lease when the reconciler
	// stops (--leader-elect-keep-lease): controller-runtime's default
	// (LeaderElectionReleaseOnCancel false), and upstream KMM's. A new
	// instance then waits for the Lease to expire (its lease duration,
	// 15 s) before it may reconcile. Off by default: the Lease is given
	// up on exit, so a restarted instance leads at once.
	KeepLeaderLease bool
	// Replicas runs that many instances of the reconciler in the process
	// (--replicas), each with a manager, a cache and a leader-election
	// identity of its own, as a Deployment's replicas would: one leads,
	// the others wait to take over. Default 1, at most MaxReplicas; more
	// than one needs LeaderElection.
	Replicas int
	// MetricsBindAddress serves Prometheus metrics (--metrics-bind-address);
	// "0" turns them off.
	MetricsBindAddress string
	// MaxConcurrentReconciles is how many nodes are reconciled at once
	// (--max-concurrent-reconciles); default DefaultMaxConcurrentReconciles.
	// After a reboot storm every node needs a loader pod at once.
	MaxConcurrentReconciles int
	// QPS is the client-side limit of API requests per second (--kube-api-qps);
	// default DefaultQPS; negative turns the limit off.
	QPS float32
	// Burst is how many requests may go at once above QPS
	// (--kube-api-burst); default DefaultBurst.
	Burst int
	// HealthProbeBindAddress serves /healthz and /readyz
	// (--health-probe-bind-address); empty or "0" turns them off.
	HealthProbeBindAddress string
	// Variant seeds one calibration defect or slowness (--variant; package
	// variant): a reference operator whose verdict is known, for 'make
	// calibrate'. Empty (or "none") is the correct reconciler. The variant
	// legacy-detector sets Detector to legacy, boot-from-node sets
	// RecordBootFrom to node, slow-start turns LeaderElection on and
	// lease-kept turns LeaderElection and KeepLeaderLease on, and
	// two-replicas those and Replicas 2 (more when more are asked for);
	// any other value of Detector or RecordBootFrom is an error with a
	// variant.
	Variant string
	// Logger receives the manager's and the reconciler's logs.
	Logger logr.Logger
	// Clock stamps lastTransitionTime when a worker reports no finish time.
	Clock clock.PassiveClock
	// OnPanic, when set, learns of a reconcile that panicked: each
	// reconcile runs under controller.Recovering, which gives the panic
	// to OnPanic and fails the reconcile (it is retried). A program that
	// runs the reconciler in-process (the harness) learns of it so.
	OnPanic controller.PanicHandler
}

// OptionsError is an option value that was not accepted. Field is the
// Options field's path (WorkerNamespaces[1]); a command line maps it to
// the flag that sets it.
type OptionsError struct {
	Field    *field.Path
	Value    string
	Accepted string
}

func (e *OptionsError) Error() string { return e.Render(e.Field.String()) }

// FieldPath is the option (the same method as the harness's typed input
// errors, so a command line renders them alike).
func (e *OptionsError) FieldPath() *field.Path { return e.Field }

// Render writes the error naming the option name (a flag, or the field).
func (e *OptionsError) Render(name string) string {
	return fmt.Sprintf("invalid %s %q: accepted: %s", name, e.Value, e.Accepted)
}

// Default returns a copy of o with every unset field filled in.
func (o Options) Default() Options {
	if o.Variant == "none" {
		o.Variant = ""
	}
	switch variant.Name(o.Variant) {
	case variant.LegacyDetector:
		if o.Detector == "" || o.Detector == DefaultDetector {
			o.Detector = detect.Legacy
		}
	case variant.BootFromNode:
		if o.RecordBootFrom == "" || o.RecordBootFrom == DefaultRecordBootFrom {
			o.RecordBootFrom = string(controller.BootFromNode)
		}
	case variant.SlowStart, variant.SlowAfterRestart:
		o.LeaderElection = true
	case variant.LeaseKept:
		o.LeaderElection, o.KeepLeaderLease = true, true
	case variant.TwoReplicas:
		o.LeaderElection, o.KeepLeaderLease = true, true
		if o.Replicas <= 1 {
			o.Replicas = 2
		}
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.Detector == "" {
		o.Detector = DefaultDetector
	}
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	if o.QPS == 0 {
		o.QPS = DefaultQPS
	}
	if o.Burst == 0 {
		o.Burst = DefaultBurst
	}
	if o.RecordBootFrom == "" {
		o.RecordBootFrom = DefaultRecordBootFrom
	}
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = DefaultLeaderElectionNamespace
	}
	if o.LeaderElectionID == "" {
		o.LeaderElectionID = DefaultLeaderElectionID
	}
	if o.MetricsBindAddress == "" {
		o.MetricsBindAddress = DefaultMetricsBindAddress
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	o.WorkerNamespaces = slices.Clone(o.WorkerNamespaces)
	return o
}

// Validate reports the first value that cannot work. Call it on a
// defaulted Options.
func (o Options) Validate() error {
	if !detect.Known(o.Detector) {
		return &OptionsError{Field: field.NewPath("Detector"), Value: o.Detector,
			Accepted: strings.Join(detect.Names, ", ") + " (bootid compares boot IDs; legacy is the negative control that misses fast reboots)"}
	}
	if _, err := variant.Parse(o.Variant); err != nil {
		return &OptionsError{Field: field.NewPath("Variant"), Value: o.Variant,
			Accepted: "none, " + strings.Join(variant.Names(), ", ") + " (calibration variants: one seeded defect or slowness each)"}
	}
	if v := variant.Name(o.Variant); v != variant.None && v != variant.LegacyDetector && o.Detector != DefaultDetector {
		return &OptionsError{Field: field.NewPath("Detector"), Value: o.Detector,
			Accepted: DefaultDetector + " with variant " + o.Variant + " (a variant seeds exactly one defect)"}
	}
	if v := variant.Name(o.Variant); v != variant.None && v != variant.BootFromNode && o.RecordBootFrom != DefaultRecordBootFrom {
		return &OptionsError{Field: field.NewPath("RecordBootFrom"), Value: o.RecordBootFrom,
			Accepted: DefaultRecordBootFrom + " with variant " + o.Variant + " (a variant seeds exactly one defect)"}
	}
	if o.MaxConcurrentReconciles < 1 {
		return &OptionsError{Field: field.NewPath("MaxConcurrentReconciles"), Value: fmt.Sprint(o.MaxConcurrentReconciles),
			Accepted: "1 or more"}
	}
	if o.Burst < 1 {
		return &OptionsError{Field: field.NewPath("Burst"), Value: fmt.Sprint(o.Burst), Accepted: "1 or more"}
	}
	if !slices.Contains(controller.BootSources, controller.BootSource(o.RecordBootFrom)) {
		names := make([]string, len(controller.BootSources))
		for i, s := range controller.BootSources {
			names[i] = string(s)
		}
		return &OptionsError{Field: field.NewPath("RecordBootFrom"), Value: o.RecordBootFrom,
			Accepted: strings.Join(names, ", ") + " (worker reads the worker's termination message; node is the recording bug kept as a control)"}
	}
	for i, ns := range o.WorkerNamespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return &OptionsError{Field: field.NewPath("WorkerNamespaces").Index(i), Value: ns,
				Accepted: "namespace names (DNS-1123 labels): " + strings.Join(errs, "; ")}
		}
	}
	if o.Replicas < 1 || o.Replicas > MaxReplicas {
		return &OptionsError{Field: field.NewPath("Replicas"), Value: fmt.Sprint(o.Replicas),
			Accepted: fmt.Sprintf("1 to %d", MaxReplicas)}
	}
	if o.Replicas > 1 && !o.LeaderElection {
		return &OptionsError{Field: field.NewPath("Replicas"), Value: fmt.Sprint(o.Replicas),
			Accepted: "1 without leader election (the replicas would all reconcile)"}
	}
	if o.KeepLeaderLease && !o.LeaderElection {
		return &OptionsError{Field: field.NewPath("KeepLeaderLease"), Value: "true",
			Accepted: "false without leader election (there is no Lease to keep)"}
	}
	if o.LeaderElection {
		if errs := validation.IsDNS1123Label(o.LeaderElectionNamespace); len(errs) > 0 {
			return &OptionsError{Field: field.NewPath("LeaderElectionNamespace"), Value: o.LeaderElectionNamespace,
				Accepted: "a namespace name (DNS-1123 label)"}
		}
		if errs := validation.IsDNS1123Subdomain(o.LeaderElectionID); len(errs) > 0 {
			return &OptionsError{Field: field.NewPath("LeaderElectionID"), Value: o.LeaderElectionID,
				Accepted: "a Lease name (DNS-1123 subdomain)"}
		}
	}
	return nil
}

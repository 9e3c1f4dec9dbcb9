package subject

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/internal/runs"
	"github.com/bootproof/bootproof/kmm"
	"github.com/bootproof/bootproof/kmm/detect"
	"github.com/bootproof/bootproof/scenarios"
)

// Names of the subjects (defined by scenarios, whose expect maps name
// them).
const (
	BootID       = scenarios.SubjectBootID
	Legacy       = scenarios.SubjectLegacy
	ExternalName = scenarios.SubjectExternal
)

// Names lists the accepted subject names.
var Names = scenarios.KnownSubjects()

// bundledDetectors is the reboot detector each bundled reconciler runs:
// a subject's name is the harness's vocabulary, a detector's is kmm's.
var bundledDetectors = map[string]string{BootID: detect.BootID, Legacy: detect.Legacy}

// New returns the named subject for cluster c.
func New(name string, c scenarios.Cluster) (scenarios.Subject, error) {
	switch name {
	case BootID, Legacy:
		return &KMM{Detector: bundledDetectors[name], Cluster: c, SubjectName: name}, nil
	case ExternalName:
		return External{}, nil
	}
	return nil, fmt.Errorf("unknown subject %q: accepted: bootid, legacy, external", name)
}

// FromFile returns the subject a subject file describes, on cluster c,
// for run runID (it labels what the file's manifests create); an exec
// subject's output, or a deployment's pods' logs, go to logDir/<name>.log.
func FromFile(f *File, c scenarios.Cluster, logDir, runID string) scenarios.Subject {
	if f.Exec != nil {
		return &Exec{File: f, Cluster: c, LogDir: logDir, RunID: runID}
	}
	return &Deployment{File: f, Cluster: c, RunID: runID, LogDir: logDir}
}

// KMM is package kmm's reconciler run in-process for each case, scoped to
// the case's nodes and namespace.
type KMM struct {
	// SubjectName is its name in reports and expect maps.
	SubjectName string
	// Detector is the reboot detector it runs (kmm/detect: detect.BootID,
	// detect.Legacy).
	Detector string
	Cluster  scenarios.Cluster
	// RecordBootFrom, when set, overrides which boot a load is recorded in.
	RecordBootFrom string
	// Variant, when set, is the calibration variant it runs (package
	// kmm/variant).
	Variant string
}

// Name implements scenarios.Subject.
func (k *KMM) Name() string { return k.SubjectName }

// InProcess returns the calibration variant subject file f describes, run
// in this process as the KMM subject is (for speed: no process per
// subject), judged with f's expectations. f must have a calibration
// section.
func InProcess(f *File, c scenarios.Cluster) (scenarios.Subject, error) {
	if f.Calibration == nil {
		return nil, fmt.Errorf("subject file %s: no calibration section: only bootproof's calibration variants run in-process", f.Path)
	}
	return &calibrated{KMM: &KMM{Detector: detect.BootID, Cluster: c, Variant: f.Calibration.Variant, SubjectName: f.Name}, file: f}, nil
}

// calibrated is a calibration variant run in-process.
type calibrated struct {
	*KMM
	file *File
}

// Expectation implements scenarios.Expecter.
func (c *calibrated) Expectation(s *scenarios.Scenario) (scenarios.Expectation, bool) {
	return c.file.Expectation(s)
}

// CanPause implements scenarios.PauseChecker: the reconciler runs in
// this process.
func (k *KMM) CanPause() error { return nil }

// Prepare installs the CRD and the RBAC manifest for the case's namespace.
func (k *KMM) Prepare(ctx context.Context, req scenarios.SubjectRequest) error {
	if err := kmm.Install(ctx, k.Cluster.RESTConfig(), kmm.InstallOptions{WorkerNamespaces: []string{req.Namespace}, LeaderElectionNamespace: req.Namespace,
		// Shared by runs; removed when no run is alive, and only if this
		// install created them.
		CreatedLabels: runs.SharedLabels()}); err != nil {
		return fmt.Errorf("install kmm: %w", err)
	}
	return nil
}

// Start starts the reconciler for the case, as a member of kmm.RBACGroup
// where the cluster issues identities.
func (k *KMM) Start(ctx context.Context, req scenarios.SubjectRequest) (scenarios.SubjectInstance, error) {
	admin := k.Cluster.RESTConfig()
	rc := admin
	if iss := cluster.IssuerOf(k.Cluster); iss != nil {
		var err error
		// Exactly the RBAC manifest's permissions: a missing verb fails.
		if rc, err = iss.UserRESTConfig("bootproof:kmm:"+req.Namespace, kmm.RBACGroup); err != nil {
			return nil, err
		}
	}
	log := InitLogging(ctx)
	in := &instance{rc: rc, log: log, opts: kmm.Options{
		Detector: k.Detector, RecordBootFrom: k.RecordBootFrom, Variant: k.Variant, WorkerNamespaces: []string{req.Namespace},
		Selector: req.Selector, LeaderElectionNamespace: req.Namespace,
		// The cluster's client limits (generous for fleets of simulated
		// nodes) rather than the reconciler's defaults.
		QPS: rc.QPS, Burst: rc.Burst,
	}}
	if err := in.start(); err != nil {
		return nil, err
	}
	return in, nil
}

// quietSink drops the errors a reconciler logs because the harness
// stopped it (context canceled): they are the pause, not a fault.
type quietSink struct{ logr.LogSink }

func (q quietSink) Error(err error, msg string, kv ...any) {
	if q.LogSink == nil || errors.Is(err, context.Canceled) || strings.Contains(fmt.Sprint(err), context.Canceled.Error()) {
		return
	}
	q.LogSink.Error(err, msg, kv...)
}

func (q quietSink) Enabled(level int) bool { return q.LogSink != nil && q.LogSink.Enabled(level) }

func (q quietSink) Info(level int, msg string, kv ...any) {
	if q.LogSink != nil {
		q.LogSink.Info(level, msg, kv...)
	}
}

func (q quietSink) Init(info logr.RuntimeInfo) {
	if q.LogSink != nil {
		q.LogSink.Init(info)
	}
}

func (q quietSink) WithValues(kv ...any) logr.LogSink {
	if q.LogSink == nil {
		return q
	}
	return quietSink{q.LogSink.WithValues(kv...)}
}

func (q quietSink) WithName(name string) logr.LogSink {
	if q.LogSink == nil {
		return q
	}
	return quietSink{q.LogSink.WithName(name)}
}

// setCRLogger gives controller-runtime's global logger a sink once, so it
// does not complain; each manager logs through its own Options.Logger.
var setCRLogger sync.Once

type instance struct {
	rc   *rest.Config
	log  logr.Logger
	opts kmm.Options

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan error
	// failed is why the manager stopped without being asked to.
	failed error
}

func (in *instance) start() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cancel != nil {
		return errors.New("subject already running")
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := in.opts
	o.Logger = in.log
	o.OnPanic = in.panicked
	mgrs, err := kmm.NewManagers(ctx, in.rc, o)
	if err != nil {
		cancel()
		return err
	}
	done := make(chan error, 1)
	in.cancel, in.done = cancel, done
	go func() {
		err := kmm.StartAll(ctx, mgrs)
		if ctx.Err() == nil {
			// Nobody stopped it: the manager gave up on its own.
			in.mu.Lock()
			in.failed = &stopped{own: true, err: fmt.Errorf("its manager stopped on its own: %v", err)}
			in.mu.Unlock()
		}
		done <- err
	}()
	return nil
}

// panicked records a reconcile that panicked (kmm.Options.OnPanic, a
// recover around each reconcile): the subject misbehaved even though its
// manager runs on.
func (in *instance) panicked(req reconcile.Request, v any) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.failed == nil {
		in.failed = &stopped{own: true, err: fmt.Errorf("its reconciler panicked on node %s: %v", req.Name, v)}
	}
}

// Err implements scenarios.HealthReporter.
func (in *instance) Err() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.failed
}

// Pause stops the reconciler (its process is down).
func (in *instance) Pause(context.Context) error {
	in.mu.Lock()
	cancel, done := in.cancel, in.done
	in.cancel = nil
	in.mu.Unlock()
	if cancel == nil {
		return errors.New("subject is not running")
	}
	cancel()
	if err := <-done; err != nil {
		return fmt.Errorf("subject stopped with: %w", err)
	}
	return nil
}

// Resume starts the reconciler again.
func (in *instance) Resume(context.Context) error { return in.start() }

// LeaderLease implements scenarios.LeaderLeaser: the case's Lease when
// the reconciler elects a leader (a variant that turns it on).
func (in *instance) LeaderLease() (scenarios.LeaseRef, bool) {
	o := in.opts.Default()
	if !o.LeaderElection {
		return scenarios.LeaseRef{}, false
	}
	return scenarios.LeaseRef{Namespace: o.LeaderElectionNamespace, Name: o.LeaderElectionID}, true
}

// Stop stops the reconciler if it runs.
func (in *instance) Stop() error {
	in.mu.Lock()
	running := in.cancel != nil
	in.mu.Unlock()
	if !running {
		return nil
	}
	return in.Pause(context.Background())
}

// External is an operator already running in the cluster (upstream KMM,
// say): the harness only observes it. It must reconcile the
// NodeModulesConfigs the harness creates and run its workers in the
// case's namespace.
type External struct{}

// Name implements scenarios.Subject.
func (External) Name() string { return ExternalName }

// Expectation implements scenarios.Expecter: an operator is expected to
// pass every scenario.
func (External) Expectation(*scenarios.Scenario) (scenarios.Expectation, bool) {
	return scenarios.Expectation{Outcome: scenarios.Pass, Source: "an external operator is expected to pass every scenario"}, true
}

// CanPause implements scenarios.PauseChecker: the harness only observes.
func (External) CanPause() error {
	return errors.New("it only observes an operator already running; describe the operator in a subject file (exec or deployment) to run the race cases")
}

// Start implements scenarios.Subject: nothing to start.
func (External) Start(context.Context, scenarios.SubjectRequest) (scenarios.SubjectInstance, error) {
	return nopInstance{}, nil
}

type nopInstance struct{}

func (nopInstance) Stop() error { return nil }

// InitLogging sets controller-runtime's global logger, once, to the
// context's logger with the subjects' quiet filter, and returns that
// logger. Call it early in a process that runs in-process subjects:
// controller-runtime complains when its logger is not set within 30s of
// first use (VM nodes take longer than that to provision).
func InitLogging(ctx context.Context) logr.Logger {
	log := logr.New(quietSink{logr.FromContextOrDiscard(ctx).WithName("kmm").GetSink()}).V(2)
	setCRLogger.Do(func() { ctrllog.SetLogger(log) })
	return log
}

package scenarios

import (
	"context"
	"time"

	"k8s.io/client-go/rest"
)

// The engine consumes these small interfaces; package harness implements
// them for the embedded, kind and kubeconfig clusters, the fake and
// libvirt node backends and the bootid, legacy and external subjects.

// Cluster is the Kubernetes cluster a case runs on.
type Cluster interface {
	// Name is the provider's name: embedded, kind, kubeconfig.
	Name() string
	// RESTConfig is an identity that may create namespaces, Nodes'
	// NodeModulesConfigs and read everything the observer watches.
	RESTConfig() *rest.Config
	// GracePeriod is kube-controller-manager's --node-monitor-grace-period.
	GracePeriod() time.Duration
}

// Subject is the operator under test.
type Subject interface {
	// Name is the subject's name in every report: bootid, legacy,
	// external, or a subject file's name.
	Name() string
	// Start runs the subject for one case: it reconciles only the Nodes
	// and NodeModulesConfigs carrying Selector's labels and runs worker
	// pods in Namespace.
	Start(ctx context.Context, req SubjectRequest) (SubjectInstance, error)
}

// Preparer is the optional capability of a subject that installs what a
// case needs (its CRD, its RBAC in the case's namespace) before anything
// watches NodeModulesConfigs.
type Preparer interface {
	Prepare(ctx context.Context, req SubjectRequest) error
}

// Expecter is the optional capability of a subject that states its own
// expectations (a subject file's expect map); a subject without it gets
// the scenario's expect entry for its name.
type Expecter interface {
	// Expectation returns what the subject should get in s; ok is false
	// when it states nothing for s (the case is then skipped).
	Expectation(s *Scenario) (e Expectation, ok bool)
}

// PauseChecker is the optional capability of a subject to say whether
// the harness can stop and restart it (pause-subject, resume-subject,
// restart-subject); its instances then implement Pauser. A subject
// without it cannot be paused, and such cases are skipped.
type PauseChecker interface {
	// CanPause returns nil, or why the subject cannot be paused (the
	// skip reason).
	CanPause() error
}

// SubjectRequest scopes a subject to one case.
type SubjectRequest struct {
	Selector  map[string]string
	Namespace string
}

// SubjectInstance is a subject running for one case.
type SubjectInstance interface {
	Stop() error
}

// Pauser is the optional capability of a subject instance to stop acting
// for a while (its process down) and come back.
type Pauser interface {
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
}

// HealthReporter is the optional capability of a subject instance that
// can stop acting on its own: a process that exits, a manager that
// returns an error. Err returns why, or nil while it runs or while the
// harness paused it. A stop whose error is an OwnFault that says so,
// before any judged assertion failed, fails the case through
// subject-runs; any other stop is an error of the case (a subject fault:
// killed from outside, as far as anyone can tell), never a verdict.
type HealthReporter interface {
	Err() error
}

// OwnFault is the optional interface of a HealthReporter's error (found
// with errors.As) that says whether the subject stopped by its own doing:
// its process exited by itself (whatever its status: an operator never
// exits on its own), its reconciler panicked, its manager returned, its
// container exited with a status of its own. A stop from outside (a
// signal the harness did not send, the OOM killer, a deleted pod) is not
// the subject's own: OwnFault returns false, or the error does not
// implement it.
type OwnFault interface {
	error
	OwnFault() bool
}

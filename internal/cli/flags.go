package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/bootproof/bootproof/contract"
)

// flagOf maps the parameters library errors name (the root of a
// contract.FieldError's field path) to the flags that set them.
// Libraries never write flag names: the command line is the only part
// that knows them.
var flagOf = map[string]string{
	// harness/controlplane.Config
	"GracePeriod":   "--grace-period",
	"MonitorPeriod": "--monitor-period",
	"Controllers":   "--controllers",
	"StartTimeout":  "--start-timeout",
	"BinDir":        "--bin-dir",
	"CertValidity":  "--cert-validity",
	// cluster providers, the catalog, backends, the fleet's control socket
	"Kubeconfig":        "--kubeconfig",
	"KindCluster":       "--kind-cluster",
	"KindImageArchives": "--kind-load-image-archive",
	"Scenario":          "--scenario",
	"NodeCredentials":   "--node-credentials",
	"ControlSocket":     "--control-socket",
	// kmm.Options ('bootproof kmm')
	"Detector":                "--detector",
	"RecordBootFrom":          "--record-boot-from",
	"WorkerNamespaces":        "--worker-namespace",
	"LeaderElectionNamespace": "--leader-election-namespace",
	"LeaderElectionID":        "--leader-election-id",
	"KeepLeaderLease":         "--leader-elect-keep-lease",
	"Replicas":                "--replicas",
	"MaxConcurrentReconciles": "--max-concurrent-reconciles",
	"QPS":                     "--kube-api-qps",
	"Burst":                   "--kube-api-burst",
	"Variant":                 "--variant",
}

// flagError is a typed library error rendered with the flag that set
// its parameter.
type flagError struct {
	msg string
	err error
}

func (e *flagError) Error() string { return e.msg }
func (e *flagError) Unwrap() error { return e.err }

// withFlags renders err, when its chain holds a contract.FieldError
// whose parameter a flag sets, as that error naming the flag (what the
// user typed is what the message is about); the chain is kept
// (errors.As, exit codes). Other errors are returned as they are.
func withFlags(err error) error {
	var fe contract.FieldError
	if err == nil || !errors.As(err, &fe) || fe.FieldPath() == nil {
		return err
	}
	flag, ok := flagOf[fe.FieldPath().Root().String()]
	if !ok {
		return err
	}
	return &flagError{msg: fe.Render(flag), err: err}
}

// failure gives err its exit code: the one it carries already, else
// ExitUsage when a typed input error (contract.FieldError) is in its
// chain (what the user gave must change), else ExitInfra (no verdict
// could be given; a rerun may give one).
func failure(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	var fe contract.FieldError
	if errors.As(err, &fe) {
		return withCode(ExitUsage, err)
	}
	return withCode(ExitInfra, err)
}

// zeroAccepted says what duration flags accept, for refuseZero.
var zeroAccepted = map[string]string{
	"grace-period":   "a duration of at least 1s, longer than --monitor-period (e.g. 10s)",
	"monitor-period": "a positive duration shorter than --grace-period (e.g. 1s)",
	"start-timeout":  "a positive duration (e.g. 2m)",
	"cert-validity":  "a duration from 1h to 8784h that outlasts the run (e.g. 168h)",
}

// refuseZero refuses the duration flags of cmd among names that were given
// as 0: in a library configuration 0 means "the default", but on the
// command line it is a value the user typed, and never silently replaced.
func refuseZero(cmd *cobra.Command, names ...string) error {
	for _, n := range names {
		f := cmd.Flags().Lookup(n)
		if f == nil || !f.Changed {
			continue
		}
		if d, err := time.ParseDuration(f.Value.String()); err == nil && d == 0 {
			return withCode(ExitUsage, fmt.Errorf("invalid --%s 0s: accepted: %s; leave --%s out for its default", n, zeroAccepted[n], n))
		}
	}
	return nil
}

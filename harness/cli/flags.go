package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/kmm"
	"github.com/bootproof/bootproof/scenarios"
)

// flagOf maps the parameters library errors name (their typed errors'
// Field) to the flags that set them. Libraries never write flag names:
// the command line is the only part that knows them.
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
	"MaxConcurrentReconciles": "--max-concurrent-reconciles",
	"QPS":                     "--kube-api-qps",
	"Burst":                   "--kube-api-burst",
}

// renderer is a typed library error that can name its parameter by flag.
type renderer interface {
	error
	Render(name string) string
}

// flagError is err with the library's parameter names replaced by flags.
type flagError struct {
	msg string
	err error
}

func (e *flagError) Error() string { return e.msg }
func (e *flagError) Unwrap() error { return e.err }

// withFlags rewrites the message of err so the typed library error in its
// chain names the flag that set the value; the chain (errors.As, exit
// codes) is kept.
func withFlags(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	var (
		ie *scenarios.InputError
		ce *controlplane.ConfigError
		oe *kmm.OptionsError
		be *controlplane.BinariesNotFoundError
	)
	var inner renderer
	var field string
	switch {
	case errors.As(err, &ie):
		inner, field = ie, ie.Field
	case errors.As(err, &ce):
		inner, field = ce, ce.Field
	case errors.As(err, &oe):
		inner, field = oe, oe.Field
	case errors.As(err, &be):
		inner, field = be, "BinDir"
	default:
		return err
	}
	flag, ok := flagOf[field]
	if !ok {
		return err
	}
	return &flagError{msg: strings.Replace(msg, inner.Error(), inner.Render(flag), 1), err: err}
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

package cli

import (
	"errors"
	"strings"

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
	"Kubeconfig":      "--kubeconfig",
	"KindCluster":     "--kind-cluster",
	"Scenario":        "--scenario",
	"NodeCredentials": "--node-credentials",
	"ControlSocket":   "--control-socket",
	// kmm.Options ('bootproof kmm')
	"Detector":                "--detector",
	"RecordBootFrom":          "--record-boot-from",
	"WorkerNamespaces":        "--worker-namespace",
	"LeaderElectionNamespace": "--leader-election-namespace",
	"LeaderElectionID":        "--leader-election-id",
	"MaxConcurrentReconciles": "--max-concurrent-reconciles",
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

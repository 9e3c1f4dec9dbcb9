package cli

import (
	"errors"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cpbuild"
	"github.com/bootproof/bootproof/kmm"
)

// TestWithFlags: a typed library error anywhere in the chain is rendered
// from its field path with the flag that sets the parameter, whatever
// the text around it; the chain is kept; an error whose parameter no
// flag sets, or that is not typed, is left as it is.
func TestWithFlags(t *testing.T) {
	ctrl := &controlplane.ConfigError{Field: field.NewPath("Controllers").Index(1), Value: "bogus", Accepted: "node-lifecycle-controller, ..."}
	ns := &kmm.OptionsError{Field: field.NewPath("WorkerNamespaces").Index(0), Value: "Kmm_System", Accepted: "namespace names"}
	kc := &contract.InputError{Field: field.NewPath("Kubeconfig"), Value: "/x", Err: errors.New("no such file")}
	extra := &controlplane.ConfigError{Field: field.NewPath("ExtraArgs").Key("etcdd"), Value: "etcdd", Accepted: "etcd"}
	plain := errors.New("connection refused")
	cacheDir, err := cpbuild.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		err  error
		want string
		typ  error // what errors.As must still find
	}{
		{"index path, wrapped", fmt.Errorf("start control plane: %w", ctrl), `invalid --controllers "bogus": accepted: node-lifecycle-controller, ...`, ctrl},
		{"kmm option by index", ns, `invalid --worker-namespace "Kmm_System": accepted: namespace names`, ns},
		// The wrapper quotes its cause in a form of its own: only the typed
		// error is rendered, never found in or patched into the text.
		{"wrapper that rewrites its cause", &quoting{kc}, "--kubeconfig /x: no such file", kc},
		{"binaries not found", fmt.Errorf("embedded: %w", &controlplane.BinariesNotFoundError{Missing: []string{"etcd"}, Searched: []string{"bin"}}),
			"control-plane binaries not found: etcd (searched bin); build them with 'bootproof controlplane build' (into " + cacheDir +
				"; 'make controlplane' in a checkout, into its bin/; the first build takes about 11 minutes on 2 cores) or name a directory that has them (--bin-dir or $BOOTPROOF_BIN_DIR)", nil},
		{"no flag sets it", fmt.Errorf("start: %w", extra), `start: invalid ExtraArgs[etcdd] "etcdd": accepted: etcd`, extra},
		{"untyped", fmt.Errorf("start: %w", plain), "start: connection refused", plain},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := withFlags(tc.err)
			if got.Error() != tc.want {
				t.Errorf("withFlags = %q, want %q", got.Error(), tc.want)
			}
			if tc.typ != nil && !errors.Is(got, tc.typ) {
				t.Errorf("the chain lost %v", tc.typ)
			}
		})
	}
	if withFlags(nil) != nil {
		t.Error("withFlags(nil) is not nil")
	}
}

// quoting wraps an error with a message of its own making.
type quoting struct{ err error }

func (q *quoting) Error() string { return fmt.Sprintf("kubeconfig: %q", q.err.Error()) }
func (q *quoting) Unwrap() error { return q.err }

// TestFailure: a library error is a usage error (2) when the user's
// input is what must change (a typed input error in its chain), else an
// infrastructure fault (3); a code given already stays.
func TestFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		code int
	}{
		{"typed input error, wrapped", fmt.Errorf("start: %w", &controlplane.BinariesNotFoundError{Missing: []string{"etcd"}}), ExitUsage},
		{"control-plane config", &controlplane.ConfigError{Field: field.NewPath("GracePeriod"), Value: "0s"}, ExitUsage},
		{"a fault", fmt.Errorf("start: %w", errors.New("etcd exited")), ExitInfra},
		{"a code given already", withCode(ExitFailed, errors.New("1 case failed")), ExitFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := exitCode(t, failure(tc.err)); got != tc.code {
				t.Errorf("exit code %d, want %d", got, tc.code)
			}
		})
	}
	if failure(nil) != nil {
		t.Error("failure(nil) is not nil")
	}
	if ExitUsage == ExitInfra {
		t.Error("usage errors and infrastructure faults share an exit code")
	}
}

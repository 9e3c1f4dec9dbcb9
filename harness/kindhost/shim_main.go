package kindhost

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// RealRuncPaths are where the shim looks for the runc it wraps when no
// other runc is on PATH (Debian's package installs /usr/sbin/runc).
var RealRuncPaths = []string{"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc", "/usr/local/bin/runc"}

// FindRealRunc returns the runc the shim at self wraps: the first runc on
// PATH or in RealRuncPaths that is not the shim itself.
func FindRealRunc(self string) (string, error) {
	selfAbs, _ := filepath.EvalSymlinks(self)
	candidates := []string{}
	if p, err := exec.LookPath("runc"); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, RealRuncPaths...)
	for _, c := range candidates {
		abs, err := filepath.EvalSymlinks(c)
		if err != nil || abs == selfAbs {
			continue
		}
		if st, err := os.Stat(abs); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return abs, nil
		}
	}
	return "", fmt.Errorf("no runc to wrap (looked on PATH and in %v)", RealRuncPaths)
}

// ShimMain is the runtime wrapper's main: it drops the capabilities this
// host lacks from what runc is about to start, then replaces itself with
// the real runc and the same arguments. It returns only on error.
//
// With the single argument --self-test it only reports the capabilities
// this process lacks and exits 0: 'make deps-kind' runs it as the process
// of a privileged probe container.
func ShimMain(args []string) int {
	if len(args) == 2 && args[1] == "--self-test" {
		missing, err := MissingCapabilities()
		if err != nil {
			return fail(err)
		}
		fmt.Printf("privileged container started; capabilities missing from its bounding set: %v\n", missing)
		return 0
	}
	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	runc, err := FindRealRunc(self)
	if err != nil {
		return fail(err)
	}
	inv, err := ParseInvocation(args[1:])
	if err != nil {
		return fail(err)
	}
	drop, err := MissingCapabilities()
	if err != nil {
		return fail(err)
	}
	if err := Prepare(inv, drop); err != nil {
		return fail(fmt.Errorf("drop %v from runc %s: %w", drop, inv.Command, err))
	}
	err = syscall.Exec(runc, append([]string{runc}, args[1:]...), os.Environ())
	return fail(fmt.Errorf("exec %s: %w", runc, err))
}

func fail(err error) int {
	fmt.Fprintf(os.Stderr, "bootproof-runc-shim: %v\n", err)
	return 2
}

package kindhost

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// RuncPathSuffix names the file, beside the shim's executable, that holds
// the absolute path of the runc it wraps: 'make deps-kind' writes it at
// install, so the shim never looks runc up on PATH.
const RuncPathSuffix = ".runc"

// InstalledRunc reads the runc path recorded beside the shim at self: an
// absolute path to an executable that is not the shim, in a file owned by
// root and writable by no one else.
func InstalledRunc(self string) (string, error) {
	rec := self + RuncPathSuffix
	fi, err := os.Lstat(rec)
	if err != nil {
		return "", fmt.Errorf("the runc this shim wraps is not recorded (%w): install the shim with 'make deps-kind'", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !fi.Mode().IsRegular() || !ok || st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 {
		return "", fmt.Errorf("%s must be a regular file owned by root and writable by no one else (mode %v): install the shim with 'make deps-kind'", rec, fi.Mode())
	}
	data, err := os.ReadFile(rec)
	if err != nil {
		return "", err
	}
	runc := strings.TrimSpace(string(data))
	selfAbs, _ := filepath.EvalSymlinks(self)
	abs, err := filepath.EvalSymlinks(runc)
	switch {
	case !filepath.IsAbs(runc):
		return "", fmt.Errorf("%s: %q is not an absolute path", rec, runc)
	case err != nil:
		return "", fmt.Errorf("%s: runc %s: %w", rec, runc, err)
	case abs == selfAbs:
		return "", fmt.Errorf("%s names the shim itself", rec)
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s: runc %s is not an executable file", rec, runc)
	}
	return abs, nil
}

// ShimMain is the runtime wrapper's main: it drops the capabilities this
// host lacks from a fully privileged process runc is about to start (any
// other passes untouched), then replaces itself with the runc recorded at
// install and the same arguments (an exec's process file replaced by the
// rewritten one). It returns only on error.
//
// --missing prints the capabilities this host's root lacks (comma-
// separated). --self-test [--expect-missing LIST] runs as the process of
// a privileged probe container: it reports the capabilities the
// container lacks and fails unless it holds every one a privileged spec
// asks for (PrivilegedCapabilities) but those of LIST, the host's.
// --daemon-config-merge FILE SHIM prints docker's daemon.json FILE with
// the shim at SHIM registered as its default runtime (MergeDaemonConfig),
// --daemon-config-unmerge FILE SHIM without it (UnmergeDaemonConfig):
// 'make deps-kind' and its uninstall change the file with them.
func ShimMain(args []string) int {
	switch {
	case len(args) == 2 && args[1] == "--missing":
		missing, err := MissingCapabilities()
		if err != nil {
			return fail(err)
		}
		fmt.Println(strings.Join(missing, ","))
		return 0
	case len(args) >= 2 && args[1] == "--self-test":
		return selfTest(args[2:])
	case len(args) >= 2 && (args[1] == "--daemon-config-merge" || args[1] == "--daemon-config-unmerge"):
		if len(args) != 4 {
			return fail(fmt.Errorf("usage: %s DAEMON_JSON SHIM_PATH", args[1]))
		}
		return daemonConfigMain(args[1], args[2], args[3])
	}
	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	runc, err := InstalledRunc(self)
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
	known, err := PrivilegedCapabilities()
	if err != nil {
		return fail(err)
	}
	runcArgs, err := Prepare(inv, args[1:], Rewrite{Drop: drop, Known: known, Dir: DefaultShimDir})
	if err != nil {
		return fail(fmt.Errorf("drop %v from runc %s: %w", drop, inv.Command, err))
	}
	err = syscall.Exec(runc, append([]string{runc}, runcArgs...), os.Environ())
	return fail(fmt.Errorf("exec %s: %w", runc, err))
}

// selfTest is --self-test [--expect-missing LIST].
func selfTest(args []string) int {
	var want []string
	switch {
	case len(args) == 2 && args[0] == "--expect-missing":
		if args[1] != "" {
			want = strings.Split(args[1], ",")
		}
	case len(args) != 0:
		return fail(fmt.Errorf("usage: --self-test [--expect-missing CAP_A,CAP_B]"))
	}
	missing, err := MissingCapabilities()
	if err != nil {
		return fail(err)
	}
	fmt.Printf("privileged container started; capabilities missing from its bounding set: %v\n", missing)
	if len(args) != 2 {
		return 0
	}
	need, err := PrivilegedCapabilities()
	if err != nil {
		return fail(err)
	}
	var lacking []string
	for _, c := range need {
		if slices.Contains(missing, c) && !slices.Contains(want, c) {
			lacking = append(lacking, c)
		}
	}
	if len(lacking) > 0 {
		return fail(fmt.Errorf("a privileged container must get every capability but the host's missing ones %v; it also lacks %v", want, lacking))
	}
	return 0
}

func fail(err error) int {
	fmt.Fprintf(os.Stderr, "bootproof-runc-shim: %v\n", err)
	return 2
}

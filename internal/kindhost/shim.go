package kindhost

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/moby/sys/capability"
)

// capabilitySets are the sets of an OCI process's "capabilities" object.
var capabilitySets = []string{"bounding", "effective", "inheritable", "permitted", "ambient"}

// DropCapabilities removes the named capabilities from every set of an
// OCI process object (the "process" of config.json, or the file runc exec
// --process reads). Every other field is kept byte for byte. It reports
// whether anything was removed.
func DropCapabilities(process json.RawMessage, drop []string) (json.RawMessage, bool, error) {
	var proc map[string]json.RawMessage
	if err := json.Unmarshal(process, &proc); err != nil {
		return nil, false, fmt.Errorf("decode process: %w", err)
	}
	raw, ok := proc["capabilities"]
	if !ok || string(raw) == "null" {
		return process, false, nil
	}
	var sets map[string]json.RawMessage
	if err := json.Unmarshal(raw, &sets); err != nil {
		return nil, false, fmt.Errorf("decode process.capabilities: %w", err)
	}
	changed := false
	for _, name := range capabilitySets {
		r, ok := sets[name]
		if !ok || string(r) == "null" {
			continue
		}
		var caps []string
		if err := json.Unmarshal(r, &caps); err != nil {
			return nil, false, fmt.Errorf("decode process.capabilities.%s: %w", name, err)
		}
		kept := slices.DeleteFunc(slices.Clone(caps), func(c string) bool { return slices.Contains(drop, c) })
		if len(kept) == len(caps) {
			continue
		}
		enc, err := json.Marshal(kept)
		if err != nil {
			return nil, false, err
		}
		sets[name], changed = enc, true
	}
	if !changed {
		return process, false, nil
	}
	var err error
	if proc["capabilities"], err = json.Marshal(sets); err != nil {
		return nil, false, err
	}
	out, err := json.Marshal(proc)
	return out, true, err
}

// PrivilegedFloor is the last capability every runtime's --privileged
// grants: CAP_AUDIT_READ (Linux 3.16). Newer ones (CAP_PERFMON, CAP_BPF,
// CAP_CHECKPOINT_RESTORE) come only from newer runtimes: measured here,
// Debian 12's docker.io 20.10 gives a privileged container capabilities
// 0 to 37, on a kernel that knows 0 to 40.
const PrivilegedFloor = capability.CAP_AUDIT_READ

// PrivilegedCapabilities returns, as OCI names, the capabilities a
// --privileged spec holds at least: every one the running kernel knows up
// to PrivilegedFloor.
func PrivilegedCapabilities() ([]string, error) {
	last, err := capability.LastCap()
	if err != nil {
		return nil, fmt.Errorf("read the kernel's last capability: %w", err)
	}
	var out []string
	for c := capability.Cap(0); c <= min(last, PrivilegedFloor); c++ {
		out = append(out, OCIName(c))
	}
	return out, nil
}

// FullyPrivileged reports whether an OCI process object's bounding set
// holds every capability in known (PrivilegedCapabilities): what
// --privileged asks for, and the only kind of spec the shim rewrites. A
// process without capabilities, or with a bounding set that lacks one
// (a workload that added a capability or two), is not.
func FullyPrivileged(process json.RawMessage, known []string) (bool, error) {
	var proc struct {
		Capabilities *struct {
			Bounding []string `json:"bounding"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(process, &proc); err != nil {
		return false, fmt.Errorf("decode process: %w", err)
	}
	if proc.Capabilities == nil || len(known) == 0 {
		return false, nil
	}
	for _, c := range known {
		if !slices.Contains(proc.Capabilities.Bounding, c) {
			return false, nil
		}
	}
	return true, nil
}

// Rewrite is what Prepare asks of the process objects it rewrites: drop
// these capabilities, from fully privileged specs only (Known is
// PrivilegedCapabilities).
type Rewrite struct {
	Drop, Known []string
	// Dir receives rewritten runc exec process files: a directory of the
	// shim's own, root-only (DefaultShimDir).
	Dir string
}

// edit returns process with r.Drop removed when it is fully privileged,
// and whether it changed.
func (r Rewrite) edit(process json.RawMessage) (json.RawMessage, bool, error) {
	full, err := FullyPrivileged(process, r.Known)
	if err != nil || !full {
		return process, false, err
	}
	return DropCapabilities(process, r.Drop)
}

// RewriteBundle drops the capabilities from the bundle's config.json
// when its process is fully privileged, replacing the file through a new
// file created exclusively beside it.
func RewriteBundle(bundle string, r Rewrite) error {
	path := filepath.Join(bundle, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	proc, ok := doc["process"]
	if !ok {
		return nil
	}
	out, changed, err := r.edit(proc)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !changed {
		return nil
	}
	doc["process"] = out
	enc, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return replaceFile(path, enc)
}

// RewriteProcess reads a runc exec process file; when its process is
// fully privileged it writes the rewritten process to a new file created
// exclusively in r.Dir (root-only, the shim's own) and returns that
// path, for runc to read instead; otherwise it returns "" and runc reads
// the caller's file as it is. The caller's file is never written.
func RewriteProcess(path string, r Rewrite) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	out, changed, err := r.edit(data)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if !changed {
		return "", nil
	}
	if err := ownDir(r.Dir); err != nil {
		return "", err
	}
	sweepOld(r.Dir, time.Hour)
	f, err := os.CreateTemp(r.Dir, "process-*.json")
	if err != nil {
		return "", err
	}
	if _, err := f.Write(out); err != nil {
		f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}

// DefaultShimDir holds the process files the shim rewrites (runc reads
// them after the shim has replaced itself with runc; later calls remove
// those over an hour old).
const DefaultShimDir = "/run/bootproof-runc-shim"

// ownDir makes dir, or checks that it is a directory (not a symlink)
// owned by this user and open to no one else.
func ownDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is not a directory of this user's that no one else may use (mode %v): remove it", dir, fi.Mode())
	}
	return nil
}

// sweepOld removes the files in dir older than age.
func sweepOld(dir string, age time.Duration) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > age {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// replaceFile replaces path with data, keeping its mode, through a file
// created exclusively in its directory (no name to guess or to plant a
// symlink at) and renamed over it.
func replaceFile(path string, data []byte) error {
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".bootproof-shim-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(st.Mode().Perm()); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Invocation is what the shim needs of runc's command line: the
// subcommand, and the bundle (create, run) or process file (exec), read
// from the subcommand's options up to the container ID (what follows it
// is the command run in the container, not runc's).
type Invocation struct {
	Command string
	Bundle  string
	Process string
	// processArg is the index in the arguments of --process's value (or
	// of --process=VALUE); -1 when absent.
	processArg int
	inline     bool
}

// runc's global options that take a value; the subcommand is the first
// argument that is neither one of them nor its value.
var globalWithValue = []string{"--root", "--log", "--log-format", "--criu", "--rootless"}

// withValue are the options of runc create, run and exec that take a
// value (runc 1.x); the container ID is the first argument that is
// neither one of them, their value, nor another option.
var withValue = []string{"--bundle", "-b", "--console-socket", "--pidfd-socket", "--pid-file", "--preserve-fds",
	"--process", "-p", "--cwd", "--env", "-e", "--user", "-u", "--additional-gids", "-g", "--process-label",
	"--apparmor", "--cap", "-c", "--cgroup"}

// ParseInvocation reads runc's arguments (without argv[0]). The bundle
// defaults to the working directory, as runc's does.
func ParseInvocation(args []string) (Invocation, error) {
	inv := Invocation{processArg: -1}
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if slices.Contains(globalWithValue, a) {
			i++
			continue
		}
		if len(a) > 0 && a[0] == '-' {
			continue
		}
		inv.Command = a
		break
	}
	for i++; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) == 0 || a[0] != '-' {
			break // the container ID: the rest is not runc's
		}
		name, value, inline := strings.Cut(a, "=")
		if !slices.Contains(withValue, name) {
			continue
		}
		if !inline {
			if i+1 >= len(args) {
				return inv, errors.New("runc " + inv.Command + ": " + name + " without a value")
			}
			i++
			value = args[i]
		}
		switch name {
		case "--bundle", "-b":
			inv.Bundle = value
		case "--process", "-p":
			inv.Process, inv.processArg, inv.inline = value, i, inline
		}
	}
	if (inv.Command == "create" || inv.Command == "run") && inv.Bundle == "" {
		inv.Bundle = "."
	}
	return inv, nil
}

// WithProcess returns args (those ParseInvocation read) with the process
// file replaced by path.
func (inv Invocation) WithProcess(args []string, path string) []string {
	out := slices.Clone(args)
	if inv.processArg < 0 {
		return out
	}
	if inv.inline {
		name, _, _ := strings.Cut(out[inv.processArg], "=")
		out[inv.processArg] = name + "=" + path
	} else {
		out[inv.processArg] = path
	}
	return out
}

// Prepare rewrites what the invocation is about to start so that a fully
// privileged process asks for none of r.Drop, and returns runc's
// arguments: args, with a rewritten exec process file's new path.
func Prepare(inv Invocation, args []string, r Rewrite) ([]string, error) {
	if len(r.Drop) == 0 {
		return args, nil
	}
	switch inv.Command {
	case "create", "run":
		return args, RewriteBundle(inv.Bundle, r)
	case "exec":
		if inv.Process == "" {
			return args, nil
		}
		p, err := RewriteProcess(inv.Process, r)
		if err != nil || p == "" {
			return args, err
		}
		return inv.WithProcess(args, p), nil
	}
	return args, nil
}

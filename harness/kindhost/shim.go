package kindhost

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// RewriteBundle drops the capabilities from the bundle's config.json.
func RewriteBundle(bundle string, drop []string) error {
	path := filepath.Join(bundle, "config.json")
	return rewriteJSON(path, drop, func(doc map[string]json.RawMessage, f func(json.RawMessage) (json.RawMessage, bool, error)) (bool, error) {
		proc, ok := doc["process"]
		if !ok {
			return false, nil
		}
		out, changed, err := f(proc)
		if err != nil || !changed {
			return false, err
		}
		doc["process"] = out
		return true, nil
	})
}

// RewriteProcess drops the capabilities from a process file (runc exec
// --process).
func RewriteProcess(path string, drop []string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, changed, err := DropCapabilities(data, drop)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !changed {
		return nil
	}
	return writeKeepingMode(path, out)
}

func rewriteJSON(path string, drop []string, edit func(map[string]json.RawMessage, func(json.RawMessage) (json.RawMessage, bool, error)) (bool, error)) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	changed, err := edit(doc, func(p json.RawMessage) (json.RawMessage, bool, error) { return DropCapabilities(p, drop) })
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !changed {
		return nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return writeKeepingMode(path, out)
}

func writeKeepingMode(path string, data []byte) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp := path + ".bootproof-shim"
	if err := os.WriteFile(tmp, data, st.Mode().Perm()); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Invocation is what the shim needs of runc's command line: the
// subcommand, and the bundle (create, run) or process file (exec).
type Invocation struct {
	Command string
	Bundle  string
	Process string
}

// runc's global options that take a value; the subcommand is the first
// argument that is neither one of them nor its value.
var globalWithValue = []string{"--root", "--log", "--log-format", "--criu", "--rootless"}

// ParseInvocation reads runc's arguments (without argv[0]). The bundle
// defaults to the working directory, as runc's does.
func ParseInvocation(args []string) (Invocation, error) {
	var inv Invocation
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
		for _, opt := range []struct {
			long, short string
			dst         *string
		}{{"--bundle", "-b", &inv.Bundle}, {"--process", "-p", &inv.Process}} {
			a := args[i]
			switch {
			case a == opt.long || a == opt.short:
				if i+1 >= len(args) {
					return inv, errors.New("runc " + inv.Command + ": " + opt.long + " without a value")
				}
				i++
				*opt.dst = args[i]
			case strings.HasPrefix(a, opt.long+"="):
				*opt.dst = strings.TrimPrefix(a, opt.long+"=")
			}
		}
	}
	if (inv.Command == "create" || inv.Command == "run") && inv.Bundle == "" {
		inv.Bundle = "."
	}
	return inv, nil
}

// Prepare rewrites what the invocation is about to start so that it asks
// for none of the dropped capabilities.
func Prepare(inv Invocation, drop []string) error {
	if len(drop) == 0 {
		return nil
	}
	switch inv.Command {
	case "create", "run":
		return RewriteBundle(inv.Bundle, drop)
	case "exec":
		if inv.Process != "" {
			return RewriteProcess(inv.Process, drop)
		}
	}
	return nil
}

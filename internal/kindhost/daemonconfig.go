package kindhost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// RuntimeName is the name under which 'make deps-kind' registers the shim
// in docker's daemon.json ("runtimes") and makes it the default runtime.
const RuntimeName = "bootproof-runc"

// ErrDaemonConfig is wrapped by every refusal of MergeDaemonConfig and
// UnmergeDaemonConfig: the file is not one they can change safely.
var ErrDaemonConfig = errors.New("daemon.json cannot be changed safely")

// MergeDaemonConfig returns docker's daemon.json old with the shim at
// shimPath registered as runtime RuntimeName and made the default runtime;
// every other key is kept. Empty (or blank) old counts as {}. If old
// registers the shim already, old is returned as it is, byte for byte. It
// refuses (wrapping ErrDaemonConfig) a file that is not a JSON object, a
// "runtimes" that is not an object, a "default-runtime" other than
// RuntimeName, and a runtime named RuntimeName other than {"path":
// shimPath}: those are settings of someone else's, which it would
// overwrite.
func MergeDaemonConfig(old []byte, shimPath string) ([]byte, error) {
	conf, runtimes, err := decodeDaemonConfig(old)
	if err != nil {
		return nil, err
	}
	defaultOK, err := defaultIsShim(conf)
	if err != nil {
		return nil, err
	}
	if r, ok := runtimes[RuntimeName]; ok {
		if !isShimRuntime(r, shimPath) {
			return nil, fmt.Errorf("%w: it already has a runtime %q, %s, not {\"path\": %q}; remove or rename it", ErrDaemonConfig, RuntimeName, compact(r), shimPath)
		}
		if defaultOK {
			return old, nil
		}
	}
	if _, set := conf["default-runtime"]; set && !defaultOK {
		return nil, fmt.Errorf("%w: its \"default-runtime\" is %s; kind's node containers need %q as docker's default runtime, and docker has one: remove \"default-runtime\" (or set it to %q)", ErrDaemonConfig, compact(conf["default-runtime"]), RuntimeName, RuntimeName)
	}
	if runtimes == nil {
		runtimes = map[string]json.RawMessage{}
	}
	var err2 error
	if runtimes[RuntimeName], err2 = json.Marshal(map[string]string{"path": shimPath}); err2 != nil {
		return nil, err2
	}
	if conf["runtimes"], err2 = marshalConfig(runtimes); err2 != nil {
		return nil, err2
	}
	conf["default-runtime"], _ = json.Marshal(RuntimeName)
	return marshalConfig(conf)
}

// UnmergeDaemonConfig is MergeDaemonConfig's inverse: cur without the
// shim's registration (the runtime RuntimeName if it is {"path":
// shimPath}, "runtimes" if nothing else is left in it, and
// "default-runtime" if it names RuntimeName). A file that does not
// register the shim is returned as it is, byte for byte; one that holds
// nothing else becomes {}.
func UnmergeDaemonConfig(cur []byte, shimPath string) ([]byte, error) {
	conf, runtimes, err := decodeDaemonConfig(cur)
	if err != nil {
		return nil, err
	}
	defaultShim, err := defaultIsShim(conf)
	if err != nil {
		return nil, err
	}
	r, registered := runtimes[RuntimeName]
	registered = registered && isShimRuntime(r, shimPath)
	if !registered && !defaultShim {
		return cur, nil
	}
	if defaultShim {
		delete(conf, "default-runtime")
	}
	if registered {
		delete(runtimes, RuntimeName)
		if len(runtimes) == 0 {
			delete(conf, "runtimes")
		} else if conf["runtimes"], err = marshalConfig(runtimes); err != nil {
			return nil, err
		}
	}
	return marshalConfig(conf)
}

// decodeDaemonConfig reads daemon.json as an object, and its "runtimes"
// (nil when absent or null).
func decodeDaemonConfig(data []byte) (conf, runtimes map[string]json.RawMessage, err error) {
	conf = map[string]json.RawMessage{}
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &conf); err != nil {
			return nil, nil, fmt.Errorf("%w: not a JSON object (%w); docker's daemon.json must be one", ErrDaemonConfig, err)
		}
		if conf == nil { // the file is "null"
			return nil, nil, fmt.Errorf("%w: it is null, not a JSON object; docker's daemon.json must be one", ErrDaemonConfig)
		}
	}
	if r, ok := conf["runtimes"]; ok && string(r) != "null" {
		if err := json.Unmarshal(r, &runtimes); err != nil {
			return nil, nil, fmt.Errorf("%w: its \"runtimes\" is not an object of runtimes (%w)", ErrDaemonConfig, err)
		}
	}
	return conf, runtimes, nil
}

// defaultIsShim reports whether conf's "default-runtime" names RuntimeName.
func defaultIsShim(conf map[string]json.RawMessage) (bool, error) {
	r, ok := conf["default-runtime"]
	if !ok {
		return false, nil
	}
	var name string
	if err := json.Unmarshal(r, &name); err != nil {
		return false, fmt.Errorf("%w: its \"default-runtime\" is %s, not a runtime's name (%w)", ErrDaemonConfig, compact(r), err)
	}
	return name == RuntimeName, nil
}

// isShimRuntime reports whether a runtime's entry is exactly
// {"path": shimPath}.
func isShimRuntime(r json.RawMessage, shimPath string) bool {
	var entry map[string]json.RawMessage
	if json.Unmarshal(r, &entry) != nil || len(entry) != 1 {
		return false
	}
	var path string
	return json.Unmarshal(entry["path"], &path) == nil && path == shimPath
}

// marshalConfig writes an object as daemon.json is usually written: keys
// sorted, indented by two spaces, no HTML escaping, a final newline.
func marshalConfig(v map[string]json.RawMessage) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func compact(r json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, r) != nil {
		return string(r)
	}
	return buf.String()
}

// daemonConfigMain is the shim's --daemon-config-merge FILE SHIM and
// --daemon-config-unmerge FILE SHIM: it prints FILE (docker's daemon.json;
// one that does not exist counts as empty) with the shim at SHIM
// registered, or unregistered.
func daemonConfigMain(flag, file, shimPath string) int {
	data, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fail(fmt.Errorf("read docker's daemon configuration: %w", err))
	}
	change, verb, again := MergeDaemonConfig, "register the runtime shim in", "make deps-kind"
	if flag == "--daemon-config-unmerge" {
		change, verb, again = UnmergeDaemonConfig, "remove the runtime shim from", "make deps-kind-uninstall"
	}
	out, err := change(data, shimPath)
	if err != nil {
		return fail(fmt.Errorf("cannot %s %s: %w; change the file so, then run '%s' again", verb, file, err, again))
	}
	if _, err := os.Stdout.Write(out); err != nil {
		return fail(err)
	}
	return 0
}

package kindhost

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestDropCapabilities(t *testing.T) {
	drop := []string{"CAP_SYS_RESOURCE"}
	for _, tc := range []struct {
		name, in    string
		wantChanged bool
		wantSets    map[string][]string
	}{
		{"privileged", `{"user":{"uid":0},"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_RESOURCE"],"effective":["CAP_SYS_RESOURCE"],"permitted":["CAP_CHOWN","CAP_SYS_RESOURCE"],"inheritable":["CAP_CHOWN"]},"args":["sh"]}`,
			true, map[string][]string{"bounding": {"CAP_CHOWN"}, "effective": {}, "permitted": {"CAP_CHOWN"}, "inheritable": {"CAP_CHOWN"}}},
		{"nothing to drop", `{"capabilities":{"bounding":["CAP_CHOWN"]}}`, false, map[string][]string{"bounding": {"CAP_CHOWN"}}},
		{"no capabilities", `{"args":["true"]}`, false, nil},
		{"null capabilities", `{"capabilities":null}`, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, changed, err := DropCapabilities(json.RawMessage(tc.in), drop)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.wantChanged {
				t.Fatalf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if !changed && string(out) != tc.in {
				t.Fatalf("unchanged input rewritten: %s", out)
			}
			var got struct {
				Capabilities map[string][]string `json:"capabilities"`
				Args         []string            `json:"args"`
				User         map[string]int      `json:"user"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if tc.wantSets != nil && !reflect.DeepEqual(got.Capabilities, tc.wantSets) {
				t.Fatalf("capabilities = %v, want %v", got.Capabilities, tc.wantSets)
			}
			var in map[string]json.RawMessage
			_ = json.Unmarshal([]byte(tc.in), &in)
			var outFields map[string]json.RawMessage
			_ = json.Unmarshal(out, &outFields)
			for k, v := range in {
				if k != "capabilities" && string(outFields[k]) != string(v) {
					t.Errorf("field %s changed: %s -> %s", k, v, outFields[k])
				}
			}
		})
	}
	if _, _, err := DropCapabilities(json.RawMessage(`{"capabilities":{"bounding":"CAP_CHOWN"}}`), drop); err == nil {
		t.Fatal("a set that is not a list was accepted")
	}
}

func TestParseInvocation(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want Invocation
	}{
		{[]string{"--root", "/run/runc", "--log", "/l.json", "--log-format", "json", "--systemd-cgroup", "create", "--bundle", "/b", "--pid-file", "/p", "id"}, Invocation{Command: "create", Bundle: "/b", processArg: -1}},
		{[]string{"create", "--bundle=/b2", "id"}, Invocation{Command: "create", Bundle: "/b2", processArg: -1}},
		{[]string{"run", "id"}, Invocation{Command: "run", Bundle: ".", processArg: -1}},
		{[]string{"--root", "/r", "exec", "--process", "/tmp/p.json", "--detach", "id"}, Invocation{Command: "exec", Process: "/tmp/p.json", processArg: 4}},
		{[]string{"exec", "--process=/tmp/p.json", "id"}, Invocation{Command: "exec", Process: "/tmp/p.json", processArg: 1, inline: true}},
		// After the container ID come the command's own arguments, not runc's.
		{[]string{"exec", "--cwd", "/x", "-e", "A=B", "id", "sh", "-c", "x", "--process", "/tmp/evil.json", "-b", "/evil"}, Invocation{Command: "exec", processArg: -1}},
		{[]string{"create", "id", "--bundle", "/evil"}, Invocation{Command: "create", Bundle: ".", processArg: -1}},
		{[]string{"--root", "/r", "delete", "id"}, Invocation{Command: "delete", processArg: -1}},
		{[]string{"--version"}, Invocation{processArg: -1}},
	} {
		got, err := ParseInvocation(tc.args)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got != tc.want {
			t.Errorf("%v: got %+v, want %+v", tc.args, got, tc.want)
		}
	}
	if _, err := ParseInvocation([]string{"create", "--bundle"}); err == nil {
		t.Fatal("--bundle without a value was accepted")
	}
}

// known is a kernel that knows three capabilities.
var known = []string{"CAP_CHOWN", "CAP_SYS_ADMIN", "CAP_SYS_RESOURCE"}

// TestPrepareRewritesOnlyFullyPrivileged: a fully privileged bundle is
// rewritten in place (mode kept, no file left beside it); a fully
// privileged exec process is written to a new file in the shim's own
// directory, runc's arguments point at it, and the caller's file is not
// touched; a spec that is not fully privileged passes untouched.
func TestPrepareRewritesOnlyFullyPrivileged(t *testing.T) {
	dir := t.TempDir()
	r := Rewrite{Drop: []string{"CAP_SYS_RESOURCE"}, Known: known, Dir: filepath.Join(dir, "shim")}
	config := `{"ociVersion":"1.2.0","process":{"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_ADMIN","CAP_SYS_RESOURCE"]}},"root":{"path":"rootfs"}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"create", "--bundle", dir, "id"}
	got, err := Prepare(Invocation{Command: "create", Bundle: dir, processArg: -1}, args, r)
	if err != nil || !slices.Equal(got, args) {
		t.Fatalf("Prepare create: %v, %v", got, err)
	}
	var spec struct {
		OCIVersion string `json:"ociVersion"`
		Process    struct {
			Capabilities struct{ Bounding []string } `json:"capabilities"`
		} `json:"process"`
		Root struct{ Path string } `json:"root"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(spec.Process.Capabilities.Bounding, []string{"CAP_CHOWN", "CAP_SYS_ADMIN"}) || spec.OCIVersion != "1.2.0" || spec.Root.Path != "rootfs" {
		t.Fatalf("bundle config after Prepare: %s", data)
	}
	if st, _ := os.Stat(filepath.Join(dir, "config.json")); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode changed to %v", st.Mode())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".bootproof-shim-*")); len(left) != 0 {
		t.Errorf("temporary files left beside config.json: %v", left)
	}

	procIn := `{"args":["sh"],"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_ADMIN","CAP_SYS_RESOURCE"],"effective":["CAP_SYS_RESOURCE","CAP_CHOWN"]}}`
	proc := filepath.Join(dir, "process.json")
	if err := os.WriteFile(proc, []byte(procIn), 0o600); err != nil {
		t.Fatal(err)
	}
	args = []string{"--root", "/r", "exec", "--process", proc, "--detach", "id"}
	inv, err := ParseInvocation(args)
	if err != nil {
		t.Fatal(err)
	}
	got, err = Prepare(inv, args, r)
	if err != nil {
		t.Fatal(err)
	}
	if got[4] == proc || filepath.Dir(got[4]) != r.Dir || !slices.Equal(got[:4], args[:4]) || !slices.Equal(got[5:], args[5:]) {
		t.Fatalf("runc's arguments: %v", got)
	}
	if data, _ := os.ReadFile(proc); string(data) != procIn {
		t.Errorf("the caller's process file was written: %s", data)
	}
	data, _ = os.ReadFile(got[4])
	if string(data) != `{"args":["sh"],"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_ADMIN"],"effective":["CAP_CHOWN"]}}` {
		t.Errorf("rewritten process: %s", data)
	}
	if st, _ := os.Stat(r.Dir); st.Mode().Perm() != 0o700 {
		t.Errorf("the shim's directory is %v, want 0700", st.Mode())
	}

	// Not fully privileged (a workload that asked for SYS_RESOURCE alone,
	// say --cap-add): untouched, so runc fails as it would without the shim.
	partial := `{"args":["sh"],"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_RESOURCE"]}}`
	if err := os.WriteFile(proc, []byte(partial), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = Prepare(inv, args, r)
	if err != nil || !slices.Equal(got, args) {
		t.Errorf("a spec that is not fully privileged: %v, %v", got, err)
	}
	// Nothing to drop: nothing is read.
	if _, err := Prepare(Invocation{Command: "create", Bundle: filepath.Join(dir, "missing")}, nil, Rewrite{Known: known}); err != nil {
		t.Fatalf("with nothing to drop the bundle is not read: %v", err)
	}
}

// TestRewriteProcessRefusesForeignDir: the shim's directory must be its
// own: a symlink or a directory others may write to is refused.
func TestRewriteProcessRefusesForeignDir(t *testing.T) {
	dir := t.TempDir()
	proc := filepath.Join(dir, "process.json")
	if err := os.WriteFile(proc, []byte(`{"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_ADMIN","CAP_SYS_RESOURCE"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{open, link} {
		if _, err := RewriteProcess(proc, Rewrite{Drop: []string{"CAP_SYS_RESOURCE"}, Known: known, Dir: d}); err == nil || !strings.Contains(err.Error(), "no one else may use") {
			t.Errorf("%s: %v", d, err)
		}
	}
}

// docker20Privileged is the bounding set Debian 12's docker.io 20.10 gave
// a --privileged container here (capabilities 0 to 37; the kernel knows
// 0 to 40), and dockerDefaultPlus a default container's with
// --cap-add SYS_RESOURCE.
var (
	docker20Privileged = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP",
		"CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO",
		"CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG",
		"CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
		"CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ"}
	dockerDefaultPlus = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP",
		"CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE", "CAP_SYS_RESOURCE"}
)

// TestPrivilegedOnThisKernel: with this kernel's PrivilegedCapabilities,
// docker 20.10's --privileged set is fully privileged and a default
// container with one capability added is not.
func TestPrivilegedOnThisKernel(t *testing.T) {
	priv, err := PrivilegedCapabilities()
	if err != nil {
		t.Fatal(err)
	}
	if len(priv) < len(docker20Privileged) {
		t.Skipf("this kernel knows %d capabilities, fewer than docker 20.10 grants", len(priv))
	}
	spec := func(caps []string) json.RawMessage {
		data, _ := json.Marshal(map[string]any{"capabilities": map[string][]string{"bounding": caps}})
		return data
	}
	if full, err := FullyPrivileged(spec(docker20Privileged), priv); err != nil || !full {
		t.Errorf("docker 20.10's --privileged set: %t, %v; want fully privileged", full, err)
	}
	if full, err := FullyPrivileged(spec(dockerDefaultPlus), priv); err != nil || full {
		t.Errorf("a default container with --cap-add SYS_RESOURCE: %t, %v; want not fully privileged", full, err)
	}
}

func TestFullyPrivileged(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`{"capabilities":{"bounding":["CAP_SYS_RESOURCE","CAP_CHOWN","CAP_SYS_ADMIN","CAP_NET_RAW"]}}`, true},
		{`{"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_ADMIN"]}}`, false},
		{`{"capabilities":{"effective":["CAP_CHOWN","CAP_SYS_ADMIN","CAP_SYS_RESOURCE"]}}`, false},
		{`{"args":["sh"]}`, false},
	} {
		if got, err := FullyPrivileged(json.RawMessage(tc.in), known); err != nil || got != tc.want {
			t.Errorf("%s: %t, %v; want %t", tc.in, got, err, tc.want)
		}
	}
}

// TestInstalledRunc: the runc path comes from the file recorded at
// install, absolute and not the shim itself; a missing record is an
// error saying how to install.
func TestInstalledRunc(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the record must be owned by root: run as root (make test in .ci/run does)")
	}
	dir := t.TempDir()
	self := filepath.Join(dir, "runc-shim")
	runc := filepath.Join(dir, "runc")
	for _, p := range []string{self, runc} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := InstalledRunc(self); err == nil || !strings.Contains(err.Error(), "make deps-kind") {
		t.Errorf("no record: %v", err)
	}
	for _, tc := range []struct{ content, want string }{
		{runc + "\n", ""},
		{"runc", "not an absolute path"},
		{self, "names the shim itself"},
		{filepath.Join(dir, "none"), "no such file"},
	} {
		if err := os.WriteFile(self+RuncPathSuffix, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := InstalledRunc(self)
		switch {
		case tc.want == "" && (err != nil || got != runc):
			t.Errorf("%q: %s, %v", tc.content, got, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want %q", tc.content, err, tc.want)
		}
	}
	if err := os.Chmod(self+RuncPathSuffix, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := InstalledRunc(self); err == nil || !strings.Contains(err.Error(), "writable by no one else") {
		t.Errorf("a record others may write: %v", err)
	}
}

func TestMissingCapabilitiesNamesOCI(t *testing.T) {
	missing, err := MissingCapabilities()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		if len(m) < 5 || m[:4] != "CAP_" {
			t.Fatalf("not an OCI capability name: %q", m)
		}
	}
	t.Logf("this host's bounding set lacks %v", missing)
}

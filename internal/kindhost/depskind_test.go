package kindhost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"
)

// fakeStateEnv is the directory the fakes share: calls.log (every call),
// dockerd.pid and dockerd.effective (the running fake dockerd and the
// configuration it loaded), images, installed (apt packages).
const fakeStateEnv = "BOOTPROOF_FAKE_STATE"

// The fakes.

// scriptFakes are the commands hack/deps-kind.sh finds on PATH in
// TestDepsKindScript: this test binary (runFake).
var scriptFakes = []string{"docker", "dockerd", "systemctl", "service", "journalctl", "apt-get", "apt", "dpkg", "dpkg-query", "pkill", "pgrep", "killall", "runc", "go"}

func init() {
	for _, name := range scriptFakes {
		fakes[name] = func(args []string) int { return runFake(name, args) }
	}
}

// runFake records the call in calls.log, then plays the command.
func runFake(name string, args []string) int {
	st := os.Getenv(fakeStateEnv)
	appendLine(filepath.Join(st, "calls.log"), strings.Join(append([]string{name}, args...), " "))
	switch name {
	case "docker":
		return fakeDocker(st, args)
	case "dockerd":
		return fakeDockerd(st, args)
	case "systemctl":
		return fakeSystemctl(st, args)
	case "apt-get":
		return fakeAptGet(st, args)
	case "dpkg-query": // -W -f '${db:Status-Abbrev}${binary:Package}\n'
		for _, p := range readLines(filepath.Join(st, "installed")) {
			if strings.HasPrefix(p, "lib") { // Multi-Arch: same, named with its architecture
				p += ":amd64"
			}
			fmt.Printf("ii %s\n", p)
		}
		return 0
	case "dpkg": // the old script's dpkg -s
		if len(args) == 2 && args[0] == "-s" && slices.Contains(readLines(filepath.Join(st, "installed")), args[1]) {
			return 0
		}
		return 1
	case "pkill", "killall":
		if slices.Contains(args, "dockerd") {
			if pid, ok := fakeDockerdPID(st); ok {
				_ = syscall.Kill(pid, syscall.SIGTERM)
				return 0
			}
		}
		return 1
	case "pgrep":
		if pid, ok := fakeDockerdPID(st); ok && slices.Contains(args, "dockerd") {
			fmt.Println(pid)
			return 0
		}
		return 1
	case "journalctl", "runc":
		return 0
	case "go": // go build ... -o OUT: the shim the test gave
		if i := slices.Index(args, "-o"); i >= 0 && i+1 < len(args) {
			data, err := os.ReadFile(os.Getenv("BOOTPROOF_SHIM_BINARY"))
			if err == nil {
				err = os.WriteFile(args[i+1], data, 0o755)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "fake go:", err)
				return 1
			}
			return 0
		}
	}
	fmt.Fprintf(os.Stderr, "fake %s: unexpected call %q\n", name, args)
	return 1
}

func appendLine(file, line string) {
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		panic(err)
	}
}

func readLines(file string) []string {
	data, _ := os.ReadFile(file)
	return strings.Fields(string(data))
}

func writeLines(file string, lines []string) {
	data := strings.Join(lines, "\n")
	if data != "" {
		data += "\n"
	}
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		panic(err)
	}
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	rest := s[strings.LastIndex(s, ")")+1:]
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// fakeDockerdPID is the running fake dockerd's PID.
func fakeDockerdPID(st string) (int, bool) {
	data, err := os.ReadFile(filepath.Join(st, "dockerd.pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid, err == nil && alive(pid)
}

// fakeDockerd loads daemon.json as dockerd does (refusing one that is not
// JSON, or, with FAKE_DOCKERD_REJECT, one holding that string), then runs
// until SIGTERM.
func fakeDockerd(st string, args []string) int {
	if pid, ok := fakeDockerdPID(st); ok {
		fmt.Fprintf(os.Stderr, "failed to start daemon: pid file found, ensure docker is not running or delete it (pid %d)\n", pid)
		return 1
	}
	conf := filepath.Join(os.Getenv("BOOTPROOF_DEPS_ROOT"), "etc/docker/daemon.json")
	data, err := os.ReadFile(conf)
	if errors.Is(err, os.ErrNotExist) {
		data = []byte("{}")
	} else if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		fmt.Fprintf(os.Stderr, "unable to configure the Docker daemon with file %s: %v\n", conf, err)
		return 1
	}
	if r := os.Getenv("FAKE_DOCKERD_REJECT"); r != "" && bytes.Contains(data, []byte(r)) {
		fmt.Fprintf(os.Stderr, "failed to start daemon: fake dockerd rejects %s in %s\n", r, conf)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	if err := os.WriteFile(filepath.Join(st, "dockerd.effective"), data, 0o644); err != nil {
		panic(err)
	}
	pidFile := filepath.Join(st, "dockerd.pid")
	if err := os.WriteFile(pidFile+".tmp", []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		panic(err)
	}
	if err := os.Rename(pidFile+".tmp", pidFile); err != nil {
		panic(err)
	}
	fmt.Fprintf(os.Stderr, "fake dockerd %d: API listen (args %q)\n", os.Getpid(), args)
	<-sig
	if data, _ := os.ReadFile(pidFile); string(data) == strconv.Itoa(os.Getpid()) {
		_ = os.Remove(pidFile)
	}
	fmt.Fprintf(os.Stderr, "fake dockerd %d: stopped\n", os.Getpid())
	appendLine(filepath.Join(st, "calls.log"), fmt.Sprintf("dockerd-exit %d", os.Getpid()))
	return 0
}

type fakeRuntime struct {
	Path string   `json:"path"`
	Args []string `json:"runtimeArgs,omitempty"`
}

// fakeDocker answers from the running fake dockerd's loaded configuration
// (docker info renders --format with text/template, as docker does).
func fakeDocker(st string, args []string) int {
	pid, up := fakeDockerdPID(st)
	if !up {
		fmt.Fprintln(os.Stderr, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?")
		return 1
	}
	images := filepath.Join(st, "images")
	format := ""
	if i := slices.Index(args, "--format"); i >= 0 && i+1 < len(args) {
		format = args[i+1]
		args = slices.Delete(slices.Clone(args), i, i+2)
	}
	switch {
	case len(args) == 1 && args[0] == "info":
		var c struct {
			DefaultRuntime string                 `json:"default-runtime"`
			Runtimes       map[string]fakeRuntime `json:"runtimes"`
		}
		data, _ := os.ReadFile(filepath.Join(st, "dockerd.effective"))
		if err := json.Unmarshal(data, &c); err != nil {
			panic(err)
		}
		info := struct {
			ServerVersion, DefaultRuntime string
			Runtimes                      map[string]fakeRuntime
		}{"20.10.fake", "runc", map[string]fakeRuntime{"runc": {Path: "runc"}}}
		if c.DefaultRuntime != "" {
			info.DefaultRuntime = c.DefaultRuntime
		}
		for n, r := range c.Runtimes {
			info.Runtimes[n] = r
		}
		tmpl, err := template.New("").Funcs(template.FuncMap{"json": func(v any) (string, error) {
			b, err := json.Marshal(v)
			return string(b), err
		}}).Parse(format)
		if err != nil {
			fmt.Fprintln(os.Stderr, "template parsing error:", err)
			return 64
		}
		if err := tmpl.Execute(os.Stdout, info); err != nil {
			fmt.Fprintln(os.Stderr, "template:", err)
			return 1
		}
		fmt.Println()
		return 0
	case len(args) == 3 && args[0] == "image" && args[1] == "inspect":
		if slices.Contains(readLines(images), args[2]) {
			return 0
		}
		return 1
	case len(args) == 3 && args[0] == "image" && args[1] == "ls":
		for _, img := range readLines(images) {
			if strings.HasPrefix(img, args[2]+":") {
				fmt.Println(img)
			}
		}
		return 0
	case len(args) >= 2 && args[0] == "image" && args[1] == "rm":
		writeLines(images, slices.DeleteFunc(readLines(images), func(img string) bool { return slices.Contains(args[2:], img) }))
		return 0
	case len(args) == 3 && args[0] == "import" && args[1] == "-":
		if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
			panic(err)
		}
		writeLines(images, append(readLines(images), args[2]))
		return 0
	case len(args) > 0 && args[0] == "run":
		fmt.Printf("privileged container started (fake dockerd %d); capabilities missing from its bounding set: []\n", pid)
		return 0
	}
	fmt.Fprintf(os.Stderr, "fake docker: unexpected call %q\n", args)
	return 1
}

// fakeSystemctl runs the fake dockerd as docker.service would.
func fakeSystemctl(st string, args []string) int {
	if len(args) != 2 || args[1] != "docker" {
		return 1
	}
	stop := func() {
		if pid, ok := fakeDockerdPID(st); ok {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			for alive(pid) {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	start := func() int {
		if _, ok := fakeDockerdPID(st); ok {
			return 0
		}
		log, err := os.OpenFile(filepath.Join(st, "journal"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			panic(err)
		}
		cmd := exec.Command("dockerd", "--from-unit")
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			panic(err)
		}
		for range 500 {
			if _, ok := fakeDockerdPID(st); ok {
				return 0
			}
			time.Sleep(10 * time.Millisecond)
		}
		return 1
	}
	switch args[0] {
	case "start":
		return start()
	case "stop":
		stop()
		return 0
	case "restart":
		stop()
		return start()
	}
	return 1
}

// fakeAptGet installs and removes names in the installed file; installing
// debootstrap brings a dependency along, as apt does.
func fakeAptGet(st string, args []string) int {
	installed := filepath.Join(st, "installed")
	var names []string
	simulate := false
	for _, a := range args {
		switch {
		case a == "-s":
			simulate = true
		case !strings.HasPrefix(a, "-"):
			names = append(names, strings.TrimSuffix(a, ":amd64"))
		}
	}
	if len(names) == 0 {
		return 1
	}
	have := readLines(installed)
	switch names[0] {
	case "update":
		return 0
	case "install":
		for _, p := range names[1:] {
			have = append(have, p)
			if p == "debootstrap" {
				have = append(have, "distro-info")
			}
		}
		slices.Sort(have)
		writeLines(installed, slices.Compact(have))
		return 0
	case "remove":
		if simulate {
			for _, p := range append(names[1:], strings.Fields(os.Getenv("FAKE_APT_ALSO_REMOVES"))...) {
				if slices.Contains(have, p) {
					fmt.Printf("Remv %s [1.0-1]\n", p)
				}
			}
			return 0
		}
		writeLines(installed, slices.DeleteFunc(have, func(p string) bool { return slices.Contains(names[1:], p) }))
		return 0
	}
	return 1
}

// The host.

const (
	capsLacking = "000001fffeffffff" // no CAP_SYS_RESOURCE (24) on a kernel that knows 0-40
	capsFull    = "000001ffffffffff"
)

var initialPackages = []string{"libc6-dev", "tar"}

// depsHost is a host for hack/deps-kind.sh: its paths under root, its
// capabilities under proc, fake commands in bin, their state in fake.
type depsHost struct {
	t                          *testing.T
	root, proc, fake, bin, exe string
	extraEnv                   []string
	foreign                    *exec.Cmd
}

func newDepsHost(t *testing.T, capBnd string) *depsHost {
	t.Helper()
	dir := t.TempDir()
	h := &depsHost{t: t, root: filepath.Join(dir, "root"), proc: filepath.Join(dir, "proc"), fake: filepath.Join(dir, "fake"), bin: filepath.Join(dir, "bin"), exe: testBinary(t)}
	for _, d := range []string{h.root, filepath.Join(h.proc, "sys/kernel"), filepath.Join(h.proc, "self"), h.fake, h.bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"etc", "run", "usr/local/bin", "var/lib", "var/log"} { // as on any host
		if err := os.MkdirAll(filepath.Join(h.root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.setCaps(capBnd)
	quoted := "'" + strings.ReplaceAll(h.exe, "'", `'\''`) + "'"
	for _, name := range append(slices.Clone(scriptFakes), "shim") {
		dst := filepath.Join(h.bin, name)
		if name == "shim" {
			dst = filepath.Join(h.fake, "shim-binary")
		}
		script := fmt.Sprintf("#!/bin/sh\n%s=%s exec %s \"$@\"\n", fakeEnv, name, quoted)
		if err := os.WriteFile(dst, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeLines(filepath.Join(h.fake, "installed"), initialPackages)
	t.Cleanup(func() {
		if pid, ok := fakeDockerdPID(h.fake); ok {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		h.stopForeign()
	})
	return h
}

func (h *depsHost) setCaps(capBnd string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.proc, "sys/kernel/cap_last_cap"), []byte("40\n"), 0o644); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.proc, "self/status"), []byte("Name:\tcat\nCapInh:\t0000000000000000\nCapBnd:\t"+capBnd+"\n"), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *depsHost) env() []string {
	return append([]string{
		"PATH=" + h.bin + ":/usr/bin:/bin",
		"HOME=" + h.fake,
		"TMPDIR=" + h.fake,
		"LC_ALL=C",
		"BOOTPROOF_DEPS_ROOT=" + h.root,
		"BOOTPROOF_DEPS_PROC=" + h.proc,
		"BOOTPROOF_SHIM_BINARY=" + filepath.Join(h.fake, "shim-binary"),
		fakeStateEnv + "=" + h.fake,
	}, h.extraEnv...)
}

// run runs the script (BOOTPROOF_DEPS_KIND_SCRIPT, to try another one, or
// hack/deps-kind.sh).
func (h *depsHost) run(args ...string) (stdout, stderr string, code int) {
	h.t.Helper()
	script := os.Getenv("BOOTPROOF_DEPS_KIND_SCRIPT")
	if script == "" {
		script = "../../hack/deps-kind.sh"
	}
	script, err := filepath.Abs(script)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	outF, err := os.CreateTemp(h.fake, "stdout")
	if err != nil {
		h.t.Fatal(err)
	}
	errF, err := os.CreateTemp(h.fake, "stderr")
	if err != nil {
		h.t.Fatal(err)
	}
	defer outF.Close()
	defer errF.Close()
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	cmd.Env = h.env()
	cmd.Stdout, cmd.Stderr = outF, errF // files: a dockerd it leaves running holds no pipe of ours
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		h.t.Fatal(err)
	}
	o, _ := os.ReadFile(outF.Name())
	e, _ := os.ReadFile(errF.Name())
	h.t.Logf("deps-kind.sh %s: exit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(args, " "), code, o, e)
	return string(o), string(e), code
}

func (h *depsHost) path(p string) string { return filepath.Join(h.root, p) }
func (h *depsHost) shim() string         { return h.path("/usr/local/libexec/bootproof/runc-shim") }
func (h *depsHost) conf() string         { return h.path("/etc/docker/daemon.json") }
func (h *depsHost) state() string        { return h.path("/var/lib/bootproof/deps-kind") }
func (h *depsHost) calls() []string {
	data, _ := os.ReadFile(filepath.Join(h.fake, "calls.log"))
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// callsTo are the calls of a fake command ("dockerd": its starts).
func (h *depsHost) callsTo(prefix string) []string {
	var out []string
	for _, c := range h.calls() {
		if c == prefix || strings.HasPrefix(c, prefix+" ") {
			out = append(out, c)
		}
	}
	return out
}

func (h *depsHost) dockerd() (int, bool) { return fakeDockerdPID(h.fake) }

// effective is the configuration the running fake dockerd loaded.
func (h *depsHost) effective() map[string]any {
	h.t.Helper()
	if _, ok := h.dockerd(); !ok {
		h.t.Fatal("no dockerd runs")
	}
	data, err := os.ReadFile(filepath.Join(h.fake, "dockerd.effective"))
	if err != nil {
		h.t.Fatal(err)
	}
	return decodeObject(h.t, data)
}

func (h *depsHost) writeConf(data string, mode os.FileMode) {
	h.t.Helper()
	if err := os.MkdirAll(filepath.Dir(h.conf()), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(h.conf(), []byte(data), mode); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Chmod(h.conf(), mode); err != nil {
		h.t.Fatal(err)
	}
}

// startForeign starts a dockerd as an init system or a docker-in-docker
// entrypoint would: not the script's, with flags of its own.
func (h *depsHost) startForeign() int {
	h.t.Helper()
	h.stopForeign()
	cmd := exec.Command(filepath.Join(h.bin, "dockerd"), "--foreign-flag")
	cmd.Env = h.env()
	log, err := os.Create(filepath.Join(h.fake, "foreign.log"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	h.foreign = cmd
	for range 500 {
		if pid, ok := h.dockerd(); ok && pid == cmd.Process.Pid {
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatal("the foreign dockerd did not start")
	return 0
}

func (h *depsHost) stopForeign() {
	if h.foreign == nil {
		return
	}
	pid := h.foreign.Process.Pid
	_ = h.foreign.Process.Signal(syscall.SIGTERM)
	for i := 0; alive(pid) && i < 500; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	h.foreign = nil
}

func (h *depsHost) mustExist(paths ...string) {
	h.t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); err != nil {
			h.t.Errorf("%s should exist: %v", p, err)
		}
	}
}

func (h *depsHost) mustNotExist(paths ...string) {
	h.t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			h.t.Errorf("%s should not exist", p)
		}
	}
}

func (h *depsHost) mustRegister(data []byte) {
	h.t.Helper()
	v := decodeObject(h.t, data)
	r, _ := v["runtimes"].(map[string]any)
	entry, _ := r[RuntimeName].(map[string]any)
	if v["default-runtime"] != RuntimeName || entry["path"] != h.shim() {
		h.t.Errorf("the shim %s is not registered as the default runtime: %s", h.shim(), data)
	}
}

func (h *depsHost) mustNotKill() {
	h.t.Helper()
	for _, c := range []string{"pkill", "killall", "systemctl stop", "systemctl restart"} {
		if got := h.callsTo(c); len(got) > 0 {
			h.t.Errorf("the script ran %q", got)
		}
	}
}

func (h *depsHost) mustSameFile(path string, want []byte, mode os.FileMode) {
	h.t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		h.t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		h.t.Errorf("%s is\n%s\nwant, byte for byte,\n%s", path, got, want)
	}
	fi, err := os.Stat(path)
	if err != nil {
		h.t.Fatal(err)
	}
	if fi.Mode().Perm() != mode {
		h.t.Errorf("%s has mode %v, want %v", path, fi.Mode().Perm(), mode)
	}
}

func mustExit(t *testing.T, what string, code, want int) {
	t.Helper()
	if code != want {
		t.Fatalf("%s: exit %d, want %d", what, code, want)
	}
}

func mustContain(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s does not say %q:\n%s", what, w, text)
		}
	}
}

// handWritten is a daemon.json with settings of its own, as an
// administrator writes it.
const handWritten = "{\n    \"log-level\": \"warn\",\n    \"registry-mirrors\": [\"https://mirror.example\"]\n}\n"

// TestDepsKindScript runs hack/deps-kind.sh and its --uninstall against fake
// commands on PATH (docker, dockerd, systemctl, apt-get, dpkg-query, pkill,
// ...: this test binary) with the host's paths under a temporary directory
// (BOOTPROOF_DEPS_ROOT) and its capabilities faked (BOOTPROOF_DEPS_PROC).
// The fake docker answers from the configuration the fake dockerd loaded,
// not from the file.
func TestDepsKindScript(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("TestDepsKindScript needs Linux (/proc): hack/deps-kind.sh runs on Debian/Ubuntu")
	}
	for _, tool := range []string{"bash", "setsid", "awk", "tar", "sha256sum", "cmp", "comm", "install", "stat"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("TestDepsKindScript runs hack/deps-kind.sh, which needs bash, setsid (util-linux), awk, tar and coreutils: %s not found", tool)
		}
	}

	t.Run("fresh host: daemon.json written before dockerd starts, uninstall leaves nothing", func(t *testing.T) {
		t.Parallel()
		h := newDepsHost(t, capsLacking)
		_, _, code := h.run()
		mustExit(t, "install", code, 0)
		data, err := os.ReadFile(h.conf())
		if err != nil {
			t.Fatal(err)
		}
		h.mustRegister(data)
		h.mustSameFile(h.conf(), data, 0o644)
		if starts := h.callsTo("dockerd"); len(starts) != 1 {
			t.Errorf("dockerd started %d times, want once (daemon.json written first): %q", len(starts), starts)
		}
		h.mustRegister(must(json.Marshal(h.effective())))
		pid, _ := h.dockerd()
		if rec, _ := os.ReadFile(filepath.Join(h.state(), "dockerd.pid")); strings.TrimSpace(string(rec)) != strconv.Itoa(pid) {
			t.Errorf("the dockerd it started (pid %d) is not recorded: %q", pid, rec)
		}
		h.mustExist(h.shim(), h.shim()+".runc", filepath.Join(h.state(), "daemon.json.absent"), filepath.Join(h.state(), "etc-docker.created"))
		if runc, _ := os.ReadFile(h.shim() + ".runc"); strings.TrimSpace(string(runc)) != filepath.Join(h.bin, "runc") {
			t.Errorf("runc-shim.runc = %q, want the runc on PATH", runc)
		}
		installed := readLines(filepath.Join(h.fake, "installed"))
		for _, p := range []string{"debootstrap", "debian-archive-keyring", "gcc", "libseccomp-dev"} {
			if !slices.Contains(installed, p) {
				t.Errorf("%s not installed: %v", p, installed)
			}
		}
		if len(h.callsTo("docker run")) != 1 {
			t.Errorf("the privileged probe did not run: %q", h.calls())
		}

		stdout, _, code := h.run("--uninstall")
		mustExit(t, "uninstall", code, 0)
		h.mustNotExist(h.path("/etc/docker"), h.path("/usr/local/libexec/bootproof"), h.path("/usr/local/libexec"), h.path("/var/lib/bootproof"), h.path("/var/log/bootproof-dockerd.log"))
		if _, ok := h.dockerd(); ok || alive(pid) {
			t.Errorf("the dockerd it started (pid %d) still runs", pid)
		}
		if images := readLines(filepath.Join(h.fake, "images")); len(images) > 0 {
			t.Errorf("probe images left: %v", images)
		}
		if got := readLines(filepath.Join(h.fake, "installed")); !slices.Equal(got, initialPackages) {
			t.Errorf("packages after uninstall: %v, want those found %v", got, initialPackages)
		}
		h.mustNotKill()
		mustContain(t, "uninstall", stdout, "removed the runtime shim", "removing the packages it installed")

		stdout, _, code = h.run("--uninstall")
		mustExit(t, "uninstall again", code, 0)
		mustContain(t, "uninstall again", stdout, "nothing to undo")
	})

	t.Run("hand-written daemon.json merged, put back byte for byte", func(t *testing.T) {
		t.Parallel()
		h := newDepsHost(t, capsLacking)
		h.writeConf(handWritten, 0o640)
		_, _, code := h.run()
		mustExit(t, "install", code, 0)
		data, _ := os.ReadFile(h.conf())
		h.mustRegister(data)
		v := decodeObject(t, data)
		if v["log-level"] != "warn" || fmt.Sprint(v["registry-mirrors"]) != "[https://mirror.example]" {
			t.Errorf("its own settings were not kept: %s", data)
		}
		h.mustSameFile(h.conf(), data, 0o640)
		h.mustSameFile(filepath.Join(h.state(), "daemon.json.orig"), []byte(handWritten), 0o640)
		if e := h.effective(); e["log-level"] != "warn" || e["default-runtime"] != RuntimeName {
			t.Errorf("dockerd runs with %v", e)
		}

		// Changed since the install: put back as found all the same, and said.
		edited := strings.Replace(string(data), `"log-level": "warn"`, `"log-level": "debug"`, 1)
		h.writeConf(edited, 0o640)
		stdout, _, code := h.run("--uninstall", "--keep-packages")
		mustExit(t, "uninstall", code, 0)
		mustContain(t, "uninstall", stdout, "was changed since the install", `"log-level": "debug"`)
		h.mustSameFile(h.conf(), []byte(handWritten), 0o640)
		h.mustNotExist(h.state(), h.shim())
		if !slices.Contains(readLines(filepath.Join(h.fake, "installed")), "debootstrap") {
			t.Error("--keep-packages removed the packages")
		}
	})

	t.Run("a foreign dockerd is never stopped", func(t *testing.T) {
		t.Parallel()
		h := newDepsHost(t, capsLacking)
		foreign := h.startForeign()
		_, stderr, code := h.run()
		if pid, ok := h.dockerd(); !ok || pid != foreign || !alive(foreign) {
			t.Errorf("the foreign dockerd (pid %d) was stopped (now %d, %v)", foreign, pid, ok)
		}
		h.mustNotKill()
		mustExit(t, "install with a foreign dockerd to restart", code, 2)
		mustContain(t, "install", stderr, "restart dockerd the way it was started", "then run 'make deps-kind' again", "not started by this script")
		// Left as it says: daemon.json written, the host as found recorded.
		data, _ := os.ReadFile(h.conf())
		h.mustRegister(data)
		h.mustExist(filepath.Join(h.state(), "daemon.json.absent"))

		// Its owner restarts it; the script then finishes without a restart.
		foreign = h.startForeign()
		_, _, code = h.run()
		mustExit(t, "install after the owner's restart", code, 0)
		if pid, _ := h.dockerd(); pid != foreign {
			t.Fatalf("dockerd %d replaced by %d", foreign, pid)
		}
		// Uninstall: the file goes, but the shim stays while the foreign
		// dockerd uses it.
		_, stderr, code = h.run("--uninstall")
		mustExit(t, "uninstall with a foreign dockerd using the shim", code, 2)
		mustContain(t, "uninstall", stderr, "restart dockerd the way it was started", "'make deps-kind-uninstall' again")
		h.mustNotExist(h.conf())
		h.mustExist(h.shim())
		if !alive(foreign) {
			t.Fatal("uninstall stopped the foreign dockerd")
		}
		foreign = h.startForeign()
		_, _, code = h.run("--uninstall")
		mustExit(t, "uninstall after the owner's restart", code, 0)
		h.mustNotExist(h.shim(), h.state(), h.path("/etc/docker"))
		if !alive(foreign) {
			t.Fatal("uninstall stopped the foreign dockerd")
		}
		h.mustNotKill()
		if starts := h.callsTo("dockerd"); len(starts) != 3 || slices.ContainsFunc(starts, func(s string) bool { return !strings.Contains(s, "--foreign-flag") }) {
			t.Errorf("the script started a dockerd of its own: %q", starts)
		}
	})

	t.Run("systemd: a docker.service it did not start is not restarted", func(t *testing.T) {
		t.Parallel()
		h := newDepsHost(t, capsLacking)
		if err := os.MkdirAll(h.path("/run/systemd/system"), 0o755); err != nil {
			t.Fatal(err)
		}
		foreign := h.startForeign()
		_, stderr, code := h.run()
		if !alive(foreign) {
			t.Error("docker.service's dockerd was stopped")
		}
		h.mustNotKill()
		mustExit(t, "install", code, 2)
		mustContain(t, "install", stderr, "systemctl restart docker", "then run 'make deps-kind' again")
	})

	t.Run("dockerd rejecting the change: daemon.json rolled back", func(t *testing.T) {
		t.Parallel()
		h := newDepsHost(t, capsLacking)
		h.writeConf(handWritten, 0o600)
		h.extraEnv = []string{"FAKE_DOCKERD_REJECT=" + RuntimeName}
		_, stderr, code := h.run()
		mustExit(t, "install", code, 2)
		h.mustSameFile(h.conf(), []byte(handWritten), 0o600)
		mustContain(t, "install", stderr, "fake dockerd rejects bootproof-runc", "back as it was", "dockerd runs again")
		if e := h.effective(); e["log-level"] != "warn" || e["default-runtime"] != nil {
			t.Errorf("dockerd runs with %v, want the configuration as found", e)
		}
	})

	t.Run("dockerd it started, restarted by its PID; rolled back when it does not come back", func(t *testing.T) {
		t.Parallel()
		h := newDepsHost(t, capsFull)
		h.writeConf(handWritten, 0o644)
		_, _, code := h.run()
		mustExit(t, "install where every capability is granted", code, 0)
		first, _ := h.dockerd()
		// The same host, now lacking a capability: the shim, and a restart
		// of the dockerd it started, which refuses the change.
		h.setCaps(capsLacking)
		h.extraEnv = []string{"FAKE_DOCKERD_REJECT=" + RuntimeName}
		_, stderr, code := h.run()
		mustExit(t, "install with dockerd rejecting the shim", code, 2)
		mustContain(t, "install", stderr, "fake dockerd rejects bootproof-runc", "back as it was", "dockerd runs again")
		h.mustSameFile(h.conf(), []byte(handWritten), 0o644)
		second, _ := h.dockerd()
		if second == first || alive(first) {
			t.Errorf("dockerd %d not restarted (now %d)", first, second)
		}
		if e := h.effective(); e["log-level"] != "warn" || e["default-runtime"] != nil {
			t.Errorf("dockerd runs with %v after the rollback, want the configuration as found", e)
		}
		// Without the refusal: restarted (by its PID), the shim in effect.
		h.extraEnv = nil
		_, _, code = h.run()
		mustExit(t, "install", code, 0)
		third, _ := h.dockerd()
		if third == second || alive(second) {
			t.Errorf("dockerd %d not restarted (now %d)", second, third)
		}
		h.mustRegister(must(json.Marshal(h.effective())))
		log, _ := os.ReadFile(h.path("/var/log/bootproof-dockerd.log"))
		prev, _ := os.ReadFile(h.path("/var/log/bootproof-dockerd.log.1"))
		if !strings.Contains(string(prev), fmt.Sprintf("fake dockerd %d: API listen", second)) || !strings.Contains(string(log), fmt.Sprintf("fake dockerd %d: API listen", third)) ||
			strings.Contains(string(log), fmt.Sprintf("fake dockerd %d:", second)) {
			t.Errorf("dockerd's log not rotated at its start:\n.log:\n%s\n.log.1:\n%s", log, prev)
		}
		h.mustNotKill()
		// It did not run before the first install: uninstall stops it.
		_, _, code = h.run("--uninstall", "--keep-packages")
		mustExit(t, "uninstall", code, 0)
		h.mustSameFile(h.conf(), []byte(handWritten), 0o644)
		if pid, ok := h.dockerd(); ok || alive(third) {
			t.Errorf("the dockerd it started still runs (%d)", pid)
		}
	})

	t.Run("install twice: the second changes nothing", func(t *testing.T) {
		t.Parallel()
		h := newDepsHost(t, capsLacking)
		h.writeConf(handWritten, 0o644)
		_, _, code := h.run()
		mustExit(t, "install", code, 0)
		snap := snapshot(t, h.root)
		calls := len(h.calls())
		pid, _ := h.dockerd()
		_, _, code = h.run()
		mustExit(t, "install again", code, 0)
		if again := snapshot(t, h.root); !slices.Equal(again, snap) {
			t.Errorf("the second install changed the host:\n%s", diffLines(snap, again))
		}
		h.mustSameFile(filepath.Join(h.state(), "daemon.json.orig"), []byte(handWritten), 0o644)
		if now, _ := h.dockerd(); now != pid {
			t.Errorf("dockerd %d restarted (now %d)", pid, now)
		}
		for _, c := range h.calls()[calls:] {
			if strings.HasPrefix(c, "apt-get") || strings.HasPrefix(c, "dockerd") || strings.HasPrefix(c, "docker import") || strings.HasPrefix(c, "docker image rm") {
				t.Errorf("the second install ran %q", c)
			}
		}
	})

	t.Run("a host lacking no capability: nothing registered", func(t *testing.T) {
		t.Parallel()
		h := newDepsHost(t, capsFull)
		stdout, _, code := h.run()
		mustExit(t, "install", code, 0)
		mustContain(t, "install", stdout, "no runtime shim needed")
		h.mustNotExist(h.conf(), h.path("/usr/local/libexec"))
		if e := h.effective(); len(e) != 0 {
			t.Errorf("dockerd runs with %v", e)
		}
		// Something installed since depends on a package it added: the
		// packages stay, and it says why.
		writeLines(filepath.Join(h.fake, "installed"), append(readLines(filepath.Join(h.fake, "installed")), "zz-users-tool"))
		h.extraEnv = []string{"FAKE_APT_ALSO_REMOVES=zz-users-tool"}
		stdout, _, code = h.run("--uninstall")
		mustExit(t, "uninstall", code, 0)
		mustContain(t, "uninstall", stdout, "would also remove zz-users-tool (installed since)")
		if len(h.callsTo("apt-get remove")) > 0 || !slices.Contains(readLines(filepath.Join(h.fake, "installed")), "gcc") {
			t.Errorf("packages removed with a package installed since depending on them: %q", h.callsTo("apt-get remove"))
		}
		if _, ok := h.dockerd(); ok {
			t.Error("the dockerd it started still runs")
		}
		h.mustNotExist(h.path("/var/lib/bootproof"), h.path("/etc/docker"))
	})

	t.Run("another default runtime is refused, naming it", func(t *testing.T) {
		t.Parallel()
		h := newDepsHost(t, capsLacking)
		const nvidia = `{"default-runtime": "nvidia", "runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}}`
		h.writeConf(nvidia, 0o644)
		_, stderr, code := h.run()
		mustExit(t, "install", code, 2)
		mustContain(t, "install", stderr, h.conf(), `"default-runtime" is "nvidia"`, `remove "default-runtime"`)
		h.mustSameFile(h.conf(), []byte(nvidia), 0o644)
	})

	t.Run("an earlier deps-kind's shim, without a record", func(t *testing.T) {
		t.Parallel()
		h := newDepsHost(t, capsLacking)
		// What the script before this one wrote.
		old := "{\n  \"runtimes\": {\"bootproof-runc\": {\"path\": \"" + h.shim() + "\"}},\n  \"default-runtime\": \"bootproof-runc\"\n}\n"
		h.writeConf(old, 0o644)
		if err := os.MkdirAll(filepath.Dir(h.shim()), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(h.shim(), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, _, code := h.run()
		mustExit(t, "install", code, 0)
		h.mustSameFile(h.conf(), []byte(old), 0o644)
		h.mustExist(filepath.Join(h.state(), "daemon.json.absent"))
		_, _, code = h.run("--uninstall")
		mustExit(t, "uninstall", code, 0)
		h.mustNotExist(h.conf(), h.shim(), h.state())
		h.mustExist(h.path("/etc/docker")) // not recorded as created
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// snapshot lists every file under root with its mode, size, modification
// time and content hash.
func snapshot(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v %d %d", strings.TrimPrefix(p, root), fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %x", data)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			line += fmt.Sprintf(" ino %d", st.Ino)
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffLines(a, b []string) string {
	var out []string
	for _, l := range a {
		if !slices.Contains(b, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range b {
		if !slices.Contains(a, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

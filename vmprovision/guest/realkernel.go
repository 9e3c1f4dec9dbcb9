//go:build linux

package guest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bootproof/bootproof/fakes"
)

// ModuleSyscalls are the system calls RealKernel makes to change the
// module table. Tests replace them; nil in RealKernelConfig means the real
// finit_module(2) and delete_module(2).
type ModuleSyscalls interface {
	FinitModule(fd int, params string, flags int) error
	DeleteModule(name string, flags int) error
}

type linuxModuleSyscalls struct{}

func (linuxModuleSyscalls) FinitModule(fd int, params string, flags int) error {
	return unix.FinitModule(fd, params, flags)
}

func (linuxModuleSyscalls) DeleteModule(name string, flags int) error {
	return unix.DeleteModule(name, flags)
}

// RealKernelConfig configures a RealKernel. The zero value is the running
// kernel.
type RealKernelConfig struct {
	// Root is prepended to /proc and /lib/modules; empty means "/". Tests
	// point it at a sample tree.
	Root string
	// Version is the kernel release whose /lib/modules/<version> is used;
	// empty means uname -r.
	Version string
	// Syscalls change the module table; nil means the real system calls.
	Syscalls ModuleSyscalls
	// Now stamps LoadedAt; nil means time.Now.
	Now func() time.Time
}

// RealKernel implements fakes.Kernel over a real Linux kernel: the boot ID
// from /proc/sys/kernel/random/boot_id, the release from uname(2), modules
// loaded with finit_module(2) in modules.dep order and removed with
// delete_module(2), and the loaded set read back from /proc/modules.
type RealKernel struct {
	root    string
	version string
	bootID  string
	sys     ModuleSyscalls
	now     func() time.Time

	mu       sync.Mutex
	dep      map[string]ModuleDep // nil until modules.dep is read
	builtin  map[string]bool
	firstSee map[string]time.Time
}

// ModuleDep is one line of modules.dep.
type ModuleDep struct {
	// Path is the module file as written in modules.dep, relative to
	// /lib/modules/<version>.
	Path string
	// Deps are the module names it depends on, in modules.dep order.
	Deps []string
}

var _ fakes.Kernel = (*RealKernel)(nil)

// NewRealKernel returns the kernel cfg describes; it reads the boot ID and
// the release at once so a broken /proc fails here, not later.
func NewRealKernel(cfg RealKernelConfig) (*RealKernel, error) {
	k := &RealKernel{root: cfg.Root, version: cfg.Version, sys: cfg.Syscalls, now: cfg.Now, firstSee: map[string]time.Time{}}
	if k.root == "" {
		k.root = "/"
	}
	if k.sys == nil {
		k.sys = linuxModuleSyscalls{}
	}
	if k.now == nil {
		k.now = time.Now
	}
	if k.version == "" {
		var u unix.Utsname
		if err := unix.Uname(&u); err != nil {
			return nil, fmt.Errorf("real kernel: uname: %w", err)
		}
		k.version = unix.ByteSliceToString(u.Release[:])
	}
	p := k.path("proc/sys/kernel/random/boot_id")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("real kernel: boot id: %w", err)
	}
	k.bootID = strings.TrimSpace(string(b))
	if k.bootID == "" {
		return nil, fmt.Errorf("real kernel: boot id: %s is empty", p)
	}
	return k, nil
}

func (k *RealKernel) path(rel string) string { return filepath.Join(k.root, rel) }

// ModuleDir is /lib/modules/<version> under the root.
func (k *RealKernel) ModuleDir() string { return k.path(filepath.Join("lib/modules", k.version)) }

// BootID implements fakes.Kernel.
func (k *RealKernel) BootID() string { return k.bootID }

// Version implements fakes.Kernel.
func (k *RealKernel) Version() string { return k.version }

func (k *RealKernel) errFor(name string, err error) error {
	return &fakes.ModuleError{Module: name, KernelVersion: k.version, BootID: k.bootID, Err: err}
}

// ModuleName is the kernel's name for a module name or file: without
// directory and .ko[.xz|.zst|.gz] suffix, dashes as underscores.
func ModuleName(s string) string {
	s = filepath.Base(s)
	if i := strings.Index(s, ".ko"); i >= 0 {
		s = s[:i]
	}
	return strings.ReplaceAll(s, "-", "_")
}

// moduleCompressed reports whether a module file is compressed, which
// finit_module(2) must be told with MODULE_INIT_COMPRESSED_FILE.
func moduleCompressed(path string) bool {
	for _, ext := range []string{".xz", ".zst", ".gz"} {
		if strings.HasSuffix(path, ".ko"+ext) {
			return true
		}
	}
	return false
}

// ParseModulesDep parses modules.dep ("path: dep-path dep-path ...") into
// module name -> entry.
func ParseModulesDep(r io.Reader) (map[string]ModuleDep, error) {
	out := map[string]ModuleDep{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		path, rest, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("modules.dep line %d: no colon in %q", n, line)
		}
		e := ModuleDep{Path: strings.TrimSpace(path)}
		for _, d := range strings.Fields(rest) {
			e.Deps = append(e.Deps, ModuleName(d))
		}
		out[ModuleName(e.Path)] = e
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("modules.dep: %w", err)
	}
	return out, nil
}

// ProcModule is one line of /proc/modules.
type ProcModule struct {
	Name     string
	Size     int64
	RefCount int
	UsedBy   []string
	State    string // Live, Loading, Unloading
}

// ParseProcModules parses /proc/modules, whose lines are
// "name size refcount used-by, state address [taint]", newest first.
func ParseProcModules(r io.Reader) ([]ProcModule, error) {
	var out []ProcModule
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 4 {
			return nil, fmt.Errorf("/proc/modules line %d: %d fields, want at least 4: %q", n, len(f), sc.Text())
		}
		m := ProcModule{Name: f[0], State: "Live"}
		if _, err := fmt.Sscan(f[1], &m.Size); err != nil {
			return nil, fmt.Errorf("/proc/modules line %d: size %q: %w", n, f[1], err)
		}
		if f[2] != "-" {
			if _, err := fmt.Sscan(f[2], &m.RefCount); err != nil {
				return nil, fmt.Errorf("/proc/modules line %d: refcount %q: %w", n, f[2], err)
			}
		}
		if f[3] != "-" {
			for u := range strings.SplitSeq(f[3], ",") {
				if u != "" && u != "[permanent]" {
					m.UsedBy = append(m.UsedBy, u)
				}
			}
		}
		if len(f) >= 5 {
			m.State = f[4]
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("/proc/modules: %w", err)
	}
	return out, nil
}

// procModules reads the module table.
func (k *RealKernel) procModules() ([]ProcModule, error) {
	f, err := os.Open(k.path("proc/modules"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseProcModules(f)
}

// Loaded implements fakes.Kernel: the Live modules of /proc/modules in load
// order (oldest first). LoadedAt is when this process first saw the module
// loaded (the kernel does not record it).
func (k *RealKernel) Loaded() []fakes.LoadedModule {
	mods, err := k.procModules()
	if err != nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	live := map[string]bool{}
	out := make([]fakes.LoadedModule, 0, len(mods))
	for _, m := range slices.Backward(mods) {
		if m.State != "Live" {
			continue
		}
		live[m.Name] = true
		at, ok := k.firstSee[m.Name]
		if !ok {
			at = now
			k.firstSee[m.Name] = at
		}
		out = append(out, fakes.LoadedModule{Name: m.Name, LoadedAt: at})
	}
	for name := range k.firstSee {
		if !live[name] {
			delete(k.firstSee, name)
		}
	}
	return out
}

// loadIndex reads modules.dep and modules.builtin once; the caller holds mu.
func (k *RealKernel) loadIndex() error {
	if k.dep != nil {
		return nil
	}
	p := filepath.Join(k.ModuleDir(), "modules.dep")
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	defer f.Close()
	dep, err := ParseModulesDep(f)
	if err != nil {
		return fmt.Errorf("parse %s: %w", p, err)
	}
	k.dep, k.builtin = dep, readBuiltin(k.ModuleDir())
	return nil
}

// TreeKernel is a RealKernel over a kernel's module tree under root
// (lib/modules/<version>, whose modules.dep is already parsed as dep), so
// the host resolves load orders (LoadOrder) with the guest's own code. It
// loads nothing.
func TreeKernel(root, version string, dep map[string]ModuleDep) *RealKernel {
	k := &RealKernel{root: root, version: version, dep: dep}
	k.builtin = readBuiltin(k.ModuleDir())
	return k
}

// readBuiltin reads dir/modules.builtin: the modules compiled into the
// kernel (Ubuntu builds virtio_net in, say), which load as a no-op.
func readBuiltin(dir string) map[string]bool {
	builtin := map[string]bool{}
	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil {
		for l := range strings.Lines(string(b)) {
			if l = strings.TrimSpace(l); l != "" {
				builtin[ModuleName(l)] = true
			}
		}
	}
	return builtin
}

// loadOrder is the modules to insert for name, dependencies first, as
// modprobe does (modules.dep lists a module's dependencies so that the
// last one is inserted first). The caller holds mu.
func (k *RealKernel) loadOrder(name string) ([]string, error) {
	var order []string
	seen := map[string]bool{}
	var visit func(n string, stack []string) error
	visit = func(n string, stack []string) error {
		if slices.Contains(stack, n) {
			return fmt.Errorf("dependency cycle %v", append(stack, n))
		}
		if seen[n] || k.builtin[n] {
			return nil
		}
		e, ok := k.dep[n]
		if !ok {
			if len(stack) == 0 {
				return fmt.Errorf("%w in %s/modules.dep", fakes.ErrUnknownModule, k.ModuleDir())
			}
			return fmt.Errorf("dependency %s of %s: %w in %s/modules.dep", n, stack[len(stack)-1], fakes.ErrUnknownModule, k.ModuleDir())
		}
		for _, d := range slices.Backward(e.Deps) {
			if err := visit(d, append(stack, n)); err != nil {
				return err
			}
		}
		seen[n] = true
		order = append(order, n)
		return nil
	}
	if err := visit(name, nil); err != nil {
		return nil, err
	}
	return order, nil
}

// LoadOrder is the modules Load(name) inserts, dependencies first,
// including ones already loaded.
func (k *RealKernel) LoadOrder(name string) ([]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.loadIndex(); err != nil {
		return nil, err
	}
	return k.loadOrder(ModuleName(name))
}

// Load implements fakes.Kernel with modprobe semantics: the module's
// dependencies from modules.dep first, then the module, each with
// finit_module(2); a module already loaded (or built in) is skipped.
func (k *RealKernel) Load(name string) error {
	name = ModuleName(name)
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.loadIndex(); err != nil {
		return k.errFor(name, err)
	}
	order, err := k.loadOrder(name)
	if err != nil {
		return k.errFor(name, err)
	}
	mods, err := k.procModules()
	if err != nil {
		return k.errFor(name, fmt.Errorf("read module table: %w", err))
	}
	loaded := map[string]bool{}
	for _, m := range mods {
		if m.State != "Unloading" {
			loaded[m.Name] = true
		}
	}
	for _, m := range order {
		if loaded[m] {
			continue
		}
		if err := k.insert(m); err != nil {
			if m != name {
				err = fmt.Errorf("dependency %s: %w", m, err)
			}
			return k.errFor(name, err)
		}
		if _, ok := k.firstSee[m]; !ok {
			k.firstSee[m] = k.now()
		}
	}
	return nil
}

// insert loads one module file; the caller holds mu.
func (k *RealKernel) insert(name string) error {
	rel := k.dep[name].Path
	p := filepath.Join(k.ModuleDir(), rel)
	if filepath.IsAbs(rel) {
		p = k.path(rel)
	}
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("open %s: %w", p, err)
	}
	defer f.Close()
	flags := 0
	if moduleCompressed(p) {
		flags |= unix.MODULE_INIT_COMPRESSED_FILE
	}
	err = k.sys.FinitModule(int(f.Fd()), "", flags)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finit_module %s: %w", p, err)
	}
	return nil
}

// Unload implements fakes.Kernel like modprobe -r of one module: a module
// that is not loaded is no error, one in use is (ErrModuleInUse naming its
// users). Unlike modprobe -r it leaves the module's dependencies loaded,
// as the simulated kernel does.
func (k *RealKernel) Unload(name string) error {
	name = ModuleName(name)
	k.mu.Lock()
	defer k.mu.Unlock()
	mods, err := k.procModules()
	if err != nil {
		return k.errFor(name, fmt.Errorf("read module table: %w", err))
	}
	i := slices.IndexFunc(mods, func(m ProcModule) bool { return m.Name == name })
	if i < 0 {
		if err := k.loadIndex(); err != nil {
			return k.errFor(name, err)
		}
		if _, ok := k.dep[name]; !ok && !k.builtin[name] {
			return k.errFor(name, fmt.Errorf("%w in %s/modules.dep", fakes.ErrUnknownModule, k.ModuleDir()))
		}
		return nil
	}
	if users := mods[i].UsedBy; len(users) > 0 {
		return k.errFor(name, fmt.Errorf("%w by %s", fakes.ErrModuleInUse, strings.Join(users, ", ")))
	}
	err = k.sys.DeleteModule(name, unix.O_NONBLOCK)
	switch {
	case err == nil, errors.Is(err, unix.ENOENT):
		delete(k.firstSee, name)
		return nil
	case errors.Is(err, unix.EBUSY), errors.Is(err, unix.EWOULDBLOCK):
		return k.errFor(name, fmt.Errorf("%w: delete_module: %w", fakes.ErrModuleInUse, err))
	default:
		return k.errFor(name, fmt.Errorf("delete_module: %w", err))
	}
}

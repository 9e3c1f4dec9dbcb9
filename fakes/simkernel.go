package fakes

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"k8s.io/utils/clock"
)

// DefaultSimModules are the modules a SimKernel has unless told otherwise:
// "dummy", the upstream KMM CI pair kmm_ci_a and kmm_ci_b (loaded together
// with modulesLoadingOrder), and "bonding", which depends on "tls".
func DefaultSimModules() map[string][]string {
	return map[string][]string{
		"dummy":    nil,
		"kmm_ci_a": nil,
		"kmm_ci_b": nil,
		"tls":      nil,
		"bonding":  {"tls"},
	}
}

// SimKernel is a simulated kernel: a boot ID, a version, the modules that
// exist for that version (with their dependencies, as modules.dep lists
// them) and a per-boot table of loaded modules. It is safe for concurrent
// use.
//
// Unlike a real kernel it loads nothing: Load only records the module, at
// the time of the injected clock.
type SimKernel struct {
	mu        sync.Mutex
	clock     clock.PassiveClock
	version   string
	bootID    string
	available map[string][]string
	loaded    map[string]time.Time
	order     []string // load order in this boot
	boots     int
}

// SimKernelConfig configures a SimKernel.
type SimKernelConfig struct {
	// Version is the kernel release; default "6.1.0-bootproof-sim".
	Version string
	// Modules maps each available module to the modules it depends on;
	// default DefaultSimModules().
	Modules map[string][]string
	// Clock stamps load times; default the real clock.
	Clock clock.PassiveClock
}

// DefaultSimKernelVersion is the version of a SimKernel that names none.
const DefaultSimKernelVersion = "6.1.0-bootproof-sim"

// NewSimKernel returns a running simulated kernel in its first boot.
func NewSimKernel(cfg SimKernelConfig) (*SimKernel, error) {
	if cfg.Version == "" {
		cfg.Version = DefaultSimKernelVersion
	}
	if cfg.Modules == nil {
		cfg.Modules = DefaultSimModules()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	for m, deps := range cfg.Modules {
		for _, d := range deps {
			if _, ok := cfg.Modules[d]; !ok {
				return nil, fmt.Errorf("simulated kernel: module %s depends on %s, which is not among the modules", m, d)
			}
		}
	}
	k := &SimKernel{clock: cfg.Clock, version: cfg.Version, available: maps.Clone(cfg.Modules)}
	if _, err := k.Boot(""); err != nil {
		return nil, err
	}
	return k, nil
}

// BootID implements Kernel; it is empty while halted.
func (k *SimKernel) BootID() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.bootID
}

// Version implements Kernel.
func (k *SimKernel) Version() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.version
}

// Boots counts the boots so far, the first included.
func (k *SimKernel) Boots() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.boots
}

// Available lists the modules that exist for this kernel.
func (k *SimKernel) Available() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Sorted(maps.Keys(k.available))
}

func (k *SimKernel) errFor(name string, err error) error {
	return &ModuleError{Module: name, KernelVersion: k.version, BootID: k.bootID, Err: err}
}

// Load implements Kernel with modprobe semantics: dependencies first.
func (k *SimKernel) Load(name string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.bootID == "" {
		return k.errFor(name, ErrKernelDown)
	}
	return k.load(name, nil)
}

func (k *SimKernel) load(name string, stack []string) error {
	deps, ok := k.available[name]
	if !ok {
		return k.errFor(name, ErrUnknownModule)
	}
	if slices.Contains(stack, name) {
		return k.errFor(name, fmt.Errorf("dependency cycle %v", append(stack, name)))
	}
	if _, loaded := k.loaded[name]; loaded {
		return nil
	}
	for _, d := range deps {
		if err := k.load(d, append(stack, name)); err != nil {
			return err
		}
	}
	k.loaded[name] = k.clock.Now()
	k.order = append(k.order, name)
	return nil
}

// Unload implements Kernel with modprobe -r semantics.
func (k *SimKernel) Unload(name string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.bootID == "" {
		return k.errFor(name, ErrKernelDown)
	}
	if _, ok := k.available[name]; !ok {
		return k.errFor(name, ErrUnknownModule)
	}
	if _, loaded := k.loaded[name]; !loaded {
		return nil
	}
	for m := range k.loaded {
		if slices.Contains(k.available[m], name) {
			return k.errFor(name, fmt.Errorf("%w by %s", ErrModuleInUse, m))
		}
	}
	delete(k.loaded, name)
	k.order = slices.DeleteFunc(k.order, func(s string) bool { return s == name })
	return nil
}

// Loaded implements Kernel, in load order.
func (k *SimKernel) Loaded() []LoadedModule {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]LoadedModule, 0, len(k.order))
	for _, m := range k.order {
		out = append(out, LoadedModule{Name: m, LoadedAt: k.loaded[m]})
	}
	return out
}

// Halt implements Rebooter.
func (k *SimKernel) Halt() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.bootID = ""
	k.loaded = nil
	k.order = nil
}

// Boot implements Rebooter.
func (k *SimKernel) Boot(version string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if version != "" {
		k.version = version
	}
	k.bootID = uuid.NewString()
	k.loaded = map[string]time.Time{}
	k.order = nil
	k.boots++
	return k.bootID, nil
}

var _ Kernel = (*SimKernel)(nil)
var _ Rebooter = (*SimKernel)(nil)

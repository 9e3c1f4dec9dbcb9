package fakes

import (
	"errors"
	"fmt"

	"github.com/bootproof/bootproof/contract"
)

// Kernel is what the lightweight kubelet needs of a kernel: its boot, its
// version, and modprobe. The simulated kernel (SimKernel) implements it in
// memory; the VM agent implements it over the real kernel.
type Kernel interface {
	// BootID is the current boot's ID (/proc/sys/kernel/random/boot_id).
	BootID() string
	// Version is the running kernel release (uname -r).
	Version() string
	// Load loads a module and the modules it depends on, like modprobe.
	// Loading a loaded module is not an error; an unknown module is an
	// error naming it (errors.Is(err, ErrUnknownModule)).
	Load(name string) error
	// Unload removes a module, like modprobe -r. Removing a module that is
	// not loaded is not an error; one that another loaded module uses is.
	Unload(name string) error
	// Loaded is the ground truth: the modules loaded in the current boot.
	Loaded() []LoadedModule
}

// Rebooter is the optional capability of a kernel the kubelet can reboot
// in-process (the simulated kernel). A real kernel reboots with its
// machine, which ends the kubelet's process.
type Rebooter interface {
	// Halt ends the current boot: every module is gone, BootID is empty.
	Halt()
	// Boot starts a new boot with a new random boot ID; a non-empty
	// version replaces the kernel version (a kernel upgrade).
	Boot(version string) (bootID string, err error)
}

// LoadedModule is one entry of the kernel's module table, as the ground
// truth publishes it (contract.LoadedModule).
type LoadedModule = contract.LoadedModule

// Kernel errors.
var (
	ErrUnknownModule = errors.New("module not found")
	ErrModuleInUse   = errors.New("module is in use")
	ErrKernelDown    = errors.New("kernel is not running")
)

// ModuleError is a modprobe failure for one module.
type ModuleError struct {
	Module        string
	KernelVersion string
	BootID        string
	Err           error
}

// Error names the module, the kernel and the boot.
func (e *ModuleError) Error() string {
	return fmt.Sprintf("module %s (kernel %s, boot %s): %v", e.Module, e.KernelVersion, e.BootID, e.Err)
}

// Unwrap returns the kernel error (ErrUnknownModule, ErrModuleInUse, ...).
func (e *ModuleError) Unwrap() error { return e.Err }

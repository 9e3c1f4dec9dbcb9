package vmtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bootproof/bootproof/vmprovision"
)

// EnvVMTest gates the tests that boot VMs.
const EnvVMTest = "BOOTPROOF_VM_TEST"

// PrepareCommand prepares the guest the VM tests find.
const PrepareCommand = "make guest-image"

// Guest is the guest prepared in the checkout.
type Guest struct {
	// Root is the checkout; Cache is its .cache, where 'make
	// guest-image' prepares, and where the VM tests put their VM files.
	Root, Cache string
	// Agent is the checkout's bin/bootproof-agent, the image's /init.
	Agent  string
	Kernel vmprovision.KernelTree
	// PVH is the kernel the domains boot (vmprovision.PVHKernel).
	PVH   string
	Image *vmprovision.Image
}

// Prepared returns the guest that 'make guest-image' prepared in the
// checkout, as 'bootproof image build' with its defaults does: the host
// distribution's kernel package and the default modules. It downloads
// and builds nothing: a part that is not there fails t, naming it and
// PrepareCommand.
func Prepared(t testing.TB) *Guest {
	t.Helper()
	g, err := prepared()
	if err != nil {
		t.Fatalf("%s is set but the guest is not prepared (run '%s' first; 'make e2e-libvirt' does): %v", EnvVMTest, PrepareCommand, err)
	}
	return g
}

func prepared() (*Guest, error) {
	root, err := CheckoutRoot()
	if err != nil {
		return nil, err
	}
	g := &Guest{Root: root, Cache: filepath.Join(root, ".cache"), Agent: filepath.Join(root, "bin", "bootproof-agent")}
	if st, err := os.Stat(g.Agent); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("guest agent %s: not a file (%v)", g.Agent, err)
	}
	// apt-cache names the kernel package from the local package lists.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if g.Kernel, err = vmprovision.CachedDebianKernel(ctx, filepath.Join(g.Cache, "kernel"), ""); err != nil {
		return nil, fmt.Errorf("guest kernel: %w", err)
	}
	if g.PVH, err = vmprovision.FindPVHKernel(g.Kernel); err != nil {
		return nil, fmt.Errorf("boot kernel: %w", err)
	}
	if g.Image, err = vmprovision.FindImage(vmprovision.ImageSpec{Kernel: g.Kernel, Agent: g.Agent}, filepath.Join(g.Cache, "images")); err != nil {
		return nil, fmt.Errorf("guest image: %w", err)
	}
	return g, nil
}

// CheckoutRoot is the directory holding go.mod at or above the working
// directory (a test runs in its package's directory).
func CheckoutRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("checkout: %w", err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("checkout: %w", err)
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("checkout: no go.mod in %s or above", dir)
		}
	}
}

// ScratchDir makes a new empty directory named prefix-* under the
// checkout's .cache/vm, where QEMU's user (libvirt runs QEMU as its own
// user) can read what a test puts there, and removes it when t ends.
func ScratchDir(t testing.TB, prefix string) string {
	t.Helper()
	root, err := CheckoutRoot()
	if err != nil {
		t.Fatal(err)
	}
	parent := filepath.Join(root, ".cache", "vm")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatalf("scratch directory: %v", err)
	}
	dir, err := os.MkdirTemp(parent, prefix+"-")
	if err != nil {
		t.Fatalf("scratch directory: %v", err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove scratch directory: %v", err)
		}
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("scratch directory: %v", err)
	}
	return dir
}

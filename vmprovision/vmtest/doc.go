// Package vmtest gives the tests that boot VMs (BOOTPROOF_VM_TEST=1) the
// guest that 'make guest-image' prepares in the checkout before them
// ('make e2e-libvirt' runs it first): bin/bootproof-agent, and in .cache
// the guest kernel, the kernel the domains boot and the initramfs. A test
// finds them there and spends none of its own timeout downloading or
// building; a part that is missing fails the test, naming the part and the
// command that prepares it. ScratchDir gives a test a directory that
// QEMU's user can read (a test's own temporary directory is private to
// its user), removed when the test ends.
package vmtest

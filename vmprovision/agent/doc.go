// Package agent is bootproof-agent, the guest side of a bootproof VM: it
// runs as /init, mounts /proc, /sys and /dev, loads the virtio network
// modules through the real kernel (guest.RealKernel), configures the
// NIC for QEMU user-mode networking with netlink, and runs the fakes
// lightweight kubelet over the real kernel with the node's own
// credentials. A small HTTP control API on the guest's control port lets
// the host ask for a guest reboot (reboot(2)) or a kernel panic (sysrq),
// and read the boot ID and /proc/modules (the wire types are in package
// vmprovision/agentapi). The log goes to /dev/console, which the VM's
// serial console records.
package agent

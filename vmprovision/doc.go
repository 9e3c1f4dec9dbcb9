// Package vmprovision boots real libvirt/QEMU VMs as bootproof nodes: a
// distro kernel plus an initramfs whose /init is the lightweight kubelet
// over the real kernel, and reboot modes (reset, guest, panic, power cycle,
// pause) with controlled downtime.
package vmprovision

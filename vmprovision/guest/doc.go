// Package guest is what a bootproof VM's guest runs besides the kubelet
// of package fakes: RealKernel, which implements fakes.Kernel over the
// running Linux kernel (the boot ID from /proc/sys/kernel/random/boot_id,
// the release from uname(2), modprobe-like Load in modules.dep order with
// finit_module(2) and MODULE_INIT_COMPRESSED_FILE for .ko.xz/.zst/.gz,
// Unload with delete_module(2), the loaded set from /proc/modules; its
// root is injectable for tests), and AgentConfig, the agent's
// configuration with its Network.
//
// The agent (package vmprovision/agent, cmd/bootproof-agent) links it
// without the host's side: package vmprovision (image builder, libvirt
// XML, node sets) imports guest, never the reverse, and guest imports
// nothing of the scenario engine. The host uses TreeKernel to resolve an
// image's modules with the guest's own code.
package guest

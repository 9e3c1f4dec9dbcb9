// Package vmprovision boots real libvirt/QEMU VMs as bootproof nodes: a
// distro kernel plus an initramfs whose /init is the lightweight kubelet
// over the real kernel, and reboot modes (reset, guest, panic, power cycle)
// with controlled downtime, plus disruptions without a reboot (pause,
// network blip, kubelet restart).
//
// The pieces:
//
//   - Package vmprovision/guest holds what the guest runs, so that the
//     agent (package vmprovision/agent, cmd/bootproof-agent) links none
//     of the host's side (image builder, libvirt XML, the engine):
//     guest.RealKernel implements fakes.Kernel over the running Linux
//     kernel, and guest.AgentConfig is the agent's configuration (node
//     name, API server as the guest reaches it, PEM credentials, timing,
//     guest.Network). The host resolves an image's modules with the same
//     code (guest.TreeKernel).
//   - FetchDebianKernel downloads the kernel behind linux-image-amd64 (on
//     Ubuntu linux-image-generic: DefaultKernelPackage) with
//     apt-get into a cache directory, unpacks it with dpkg-deb and runs
//     depmod -b (an interrupted download leaves no .deb behind).
//     PlanImage/BuildImage build the main initramfs in Go
//     (newc cpio, gzip): the agent as /init, the requested modules with
//     their dependencies and a modules.dep restricted to them; it is
//     cached by content hash. CachedDebianKernel, FindImage and
//     FindPVHKernel find those parts in the cache without downloading or
//     building anything (ErrNotPrepared when a part is missing), for
//     callers that must not spend their time preparing (the VM tests).
//     WriteBootInitramfs appends a small per-node
//     archive with /etc/bootproof/agent.json, padded to the 4-byte
//     boundary the kernel's unpacker needs.
//   - DomainXML renders a node's libvirt domain (direct kernel boot, TCG
//     or KVM, serial console to a file, a user-mode virtio NIC with the
//     agent's control port forwarded to 127.0.0.1). Backend and NodeSet
//     implement nodeapi.NodeBackend and nodeapi.NodeSet over a
//     Hypervisor; the libvirt Hypervisor (ConnectLibvirt) speaks libvirt's
//     RPC protocol in Go (github.com/digitalocean/go-libvirt), so no
//     bootproof binary needs cgo or libvirt's headers.
//     A reboot's downtime is the whole time the node is down: the domain
//     is held paused (or off) for the downtime minus the node's natural
//     boot, measured on its previous reboot (BootEstimate before that);
//     the outcome carries the downtime as measured. PauseNode suspends
//     the domain, NetworkBlip sets the NIC's link down through QEMU's
//     set_link (LinkSetter), RestartKubelet and RejectPods ask the agent.
//
// Guests reach only what they must. QEMU's user-mode network is
// restricted: a guest reaches no port of the host and nothing beyond it,
// except the API server, at https://10.0.2.100:6443 in the guest, which
// QEMU forwards by running socat per connection (NetdevSpec,
// GuestAPIServer). The host reaches the agent's control API (GET /state,
// POST /reboot, POST /panic, PUT/DELETE /modules/{name}, POST
// /restart-kubelet?downtime=D, POST /dial?addr=H:P) through the forwarded
// port, with the node's secret on every request (the agent answers 401
// without it). Package vmprovision/agentapi holds that API's paths, its
// JSON and its secret, the one definition both sides import.
//
// Tests that boot real VMs run only with BOOTPROOF_VM_TEST=1:
//
//	make guest-image    # once: bin/bootproof-agent, the kernel and image in .cache
//	BOOTPROOF_VM_TEST=1 go test ./vmprovision -run TestVMBootRebootQEMU -v
//	BOOTPROOF_VM_TEST=1 go test ./vmprovision -run TestLibvirtRebootModes -v
//	BOOTPROOF_VM_TEST=1 go test ./vmprovision -run TestVMIsolation -v
package vmprovision

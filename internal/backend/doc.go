// Package backend provides node backends as nodeapi.NodeBackend: Fake
// runs simulated nodes (package fakes) in this process; Libvirt
// (StartLibvirt) prepares package vmprovision's VM backend for a cluster:
// the guest (PrepareGuest: the kernel, downloaded once into the cache, the
// kernel the domains boot and the initramfs; 'bootproof image build' runs
// it ahead of a run), the accelerator (a KVM probe boot), per-node
// credentials and the API server address as the guest reaches it.
package backend

// Package backend provides node backends as nodeapi.NodeBackend: Fake
// runs simulated nodes (package fakes) in this process; Libvirt (build tag
// libvirt, StartLibvirt) prepares package vmprovision's VM backend for a
// cluster: the guest kernel and image, the accelerator (a KVM probe boot),
// per-node credentials and the API server address as the guest reaches
// it. Without the tag, StartLibvirt says how to build a binary that has it.
package backend

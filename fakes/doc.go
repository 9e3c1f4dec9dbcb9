// Package fakes holds bootproof's simulated nodes: a lightweight kubelet
// (Node registration, Lease and status heartbeats, boot IDs, reboots, the
// KMM worker-pod contract) over a Kernel interface, and a simulated kernel
// with a per-boot module table. The same kubelet runs inside VMs over the
// real kernel (package vmprovision).
//
// fakes never imports kmm: they meet only through the Kubernetes API, as a
// kubelet and an operator do.
package fakes

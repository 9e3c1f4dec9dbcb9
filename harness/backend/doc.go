// Package backend provides node backends as scenarios.NodeBackend: Fake
// runs simulated nodes (package fakes) in this process. The libvirt
// backend lives in package vmprovision.
package backend

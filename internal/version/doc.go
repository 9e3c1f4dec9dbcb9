// Package version says which bootproof this is: its module version,
// commit and build date (from the Go toolchain's build information, or
// stamped by a release build through the variables below), the Go version
// and platform, and what it targets: the pinned Kubernetes and etcd
// versions of its embedded control plane and the kind node image it
// expects.
package version

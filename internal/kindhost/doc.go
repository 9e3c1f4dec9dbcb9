// Package kindhost prepares a host for kind's node containers, which
// docker starts with --privileged.
//
// --privileged asks the OCI runtime for every capability the kernel knows.
// A host whose own root lacks one of them in its bounding set (a nested
// sandbox without CAP_SYS_RESOURCE, say) cannot grant it, and runc then
// refuses to start the container ("unable to apply caps: operation not
// permitted"). MissingCapabilities tells which ones the host lacks, and
// Shim is a narrow OCI runtime wrapper that 'make deps-kind' registers with
// docker on such a host only: it removes exactly those capabilities from
// the container's (or exec'd process's) capability sets and then runs the
// real runc with the same arguments. Nothing else in the spec changes, and
// on a host that lacks nothing it changes nothing.
package kindhost

// Package nodeapi is the contract between the scenario engine and the
// node backends: the interfaces a backend implements (NodeBackend,
// NodeSet and the optional capabilities), the requests the engine makes
// of them, and the reboot vocabulary (RebootMode).
//
// It imports nothing of bootproof, so a backend (the simulated nodes
// wired in internal/backend, the VMs of package vmprovision) implements it
// without linking the engine, and the engine consumes it without knowing
// a backend.
//
// Capabilities fail closed: a NodeSet lists the reboot modes it
// implements (RebootModes, without it only RebootReset), CheckMode
// refuses any other with an *UnsupportedModeError, and a backend's
// Reboot refuses a mode it does not implement rather than doing another.
package nodeapi

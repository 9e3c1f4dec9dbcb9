// Package kmm is the subject bootproof proves: a bootID-aware
// NodeModulesConfig reconciler, API-compatible with upstream Kernel Module
// Management, and the legacy Ready-transition detector kept as a negative
// control that must miss fast reboots.
package kmm

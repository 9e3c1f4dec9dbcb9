// Package kmm is the subject bootproof proves: a bootID-aware
// NodeModulesConfig reconciler, API-compatible with upstream Kernel Module
// Management, and the legacy Ready-transition detector kept as a negative
// control that must miss fast reboots.
//
// The harness and the 'bootproof kmm' command use this package only:
//
//	if err := kmm.Install(ctx, adminConfig, kmm.InstallOptions{WorkerNamespaces: []string{"kmm"}}); err != nil { ... }
//	err := kmm.Run(ctx, controllerConfig, kmm.Options{Detector: "legacy", WorkerNamespaces: []string{"kmm"}})
//
// Install applies the CRD and the least-privilege RBAC manifest (both
// embedded from kmm/config); Run runs a controller-runtime manager with the
// reconciler of package controller until ctx ends. Sub-packages: api/v1beta1
// (the NodeModulesConfig API), detect (reboot detection strategies),
// worker (the worker-pod contract), controller (the reconciler), config
// (the embedded manifests).
package kmm

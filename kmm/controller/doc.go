// Package controller is the NodeModulesConfig reconciler: for each node's
// NodeModulesConfig (NMC) it loads what spec asks for, unloads orphaned
// status entries, reloads on config change and after a reboot, through
// worker pods that follow the contract in package worker.
//
// Each reconcile of one NMC runs in this order:
//
//  1. read the NMC from the API server (not the cache), so a status written
//     by the previous reconcile is always seen;
//  2. record finished worker pods in status: a Succeeded loader records
//     the config, the boot in which the load ran (from the worker's
//     termination message, else the node's current boot ID) and
//     lastTransitionTime; a Succeeded unloader removes the entry; a Failed
//     pod records nothing;
//  3. decide per spec entry and per orphaned status entry (see
//     Reconciler.Reconcile);
//  4. write status (optimistic lock), then remove the finalizer from and
//     delete the pods whose result is recorded, then create new pods.
//
// Before its first decision the reconciler learns what the cluster's
// schema keeps of a status entry (checkSchema: a dry-run status write,
// read back). The boot-ID detector refuses to reconcile where bootId is
// pruned; the legacy detector, where lastTransitionTime is pruned
// (upstream KMM's schema), keeps its load times in LoadTimesAnnotation.
//
// Worker pods have a fixed name per node and module, so at most one exists
// per module at any time; together with step 1 that keeps the reconciler
// from starting two loads for the same module and boot, also across
// restarts.
package controller

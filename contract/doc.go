// Package contract holds what bootproof's parts share without knowing
// each other: the labels and taints of the objects a run creates, the
// tolerations a simulated node needs, the keys of upstream KMM's
// worker-pod contract, the NodeModulesConfig resource, the versions and
// kinds of bootproof's scenario and subject files (APIVersions,
// FileKind), and InputError, the typed error a library returns for a
// value a caller gave it.
//
// It is a leaf: it imports only Kubernetes API types, so the scenario
// engine, the simulated kubelet (package fakes), the VM guest and the
// harness can all use it without linking one another. Package kmm, the
// subject, does not use it: an operator stands alone, and
// harness/contract_test.go pins its own copy of the worker contract to
// this one.
package contract

package config

import (
	_ "embed"
)

// Placeholders in rbac/rbac.yaml.
const (
	WorkerNamespace         = "BOOTPROOF_WORKER_NAMESPACE"
	LeaderElectionNamespace = "BOOTPROOF_LEADER_ELECTION_NAMESPACE"
)

// RBACGroup is the group the RBAC manifest grants the reconciler's
// permissions to. Run the reconciler as a user in this group, or add a
// binding for its ServiceAccount.
const RBACGroup = "bootproof:kmm"

//go:embed crd/kmm.sigs.x-k8s.io_nodemodulesconfigs.yaml
var crdYAML []byte

//go:embed rbac/rbac.yaml
var rbacYAML []byte

// CRD returns the NodeModulesConfig CustomResourceDefinition YAML.
func CRD() []byte { return append([]byte(nil), crdYAML...) }

// RBAC returns the RBAC manifest YAML, with its namespace placeholders.
func RBAC() []byte { return append([]byte(nil), rbacYAML...) }

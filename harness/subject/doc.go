// Package subject provides the operators under test as scenarios.Subject:
// KMM runs package kmm's reconciler in this process with the bootid or
// legacy detector, with exactly its RBAC manifest's permissions where the
// cluster issues identities; External observes an operator that is
// already running in the cluster.
package subject

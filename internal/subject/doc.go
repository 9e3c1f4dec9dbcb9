// Package subject provides the operators under test as scenarios.Subject:
// KMM runs package kmm's reconciler in this process with the bootid or
// legacy detector, scoped to one case, with exactly its RBAC manifest's
// permissions where the cluster issues identities; External observes an
// operator that is already running in the cluster.
//
// A subject file (File, 'bootproof run --subject-file') describes any
// other operator: Exec starts it as a process the harness owns, Deployment
// drives one already deployed in the cluster. Both live across the run's
// cases (runner.ClusterWide), can be paused and restarted
// (scenarios.PauseChecker), report a crash during a case
// (scenarios.HealthReporter), and state their own expectations
// (scenarios.Expecter).
package subject

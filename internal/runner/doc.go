// Package runner runs a matrix of scenarios x subjects on one cluster and
// node backend with the scenario engine, several cases at once, and
// returns the results in a stable order. The CLI ('bootproof run') and the
// Ginkgo suites share it, so their verdicts for the same case agree.
//
// Subjects scoped to a case run first; then each ClusterWide subject (an
// operator that reconciles the whole cluster) in a phase of its own, set
// up once, with the cases that pause it run one at a time.
package runner

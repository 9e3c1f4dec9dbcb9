// Package runner runs a matrix of scenarios x subjects on one cluster and
// node backend with the scenario engine, several cases at once, and
// returns the results in a stable order. The CLI ('bootproof run') and the
// Ginkgo suites share it, so their verdicts for the same case agree.
package runner

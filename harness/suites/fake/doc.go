// Package fake holds the Ginkgo suite that runs the scenario catalog on
// the embedded control plane with simulated nodes, for both the bootid
// subject and the legacy negative control. 'make test' runs it and writes
// reports/junit-embedded.xml (--ginkgo.junit-report) and the HTML report
// under reports/embedded/.
//
// The cases run concurrently on one control plane in BeforeSuite (through
// package runner, as 'bootproof run' does, so their verdicts agree); each
// spec then asserts one case's verdict. Label filters (--ginkgo.label-filter)
// select which cases run. BOOTPROOF_SUITE_PARALLEL (default 4) and
// BOOTPROOF_SUITE_MAX_NODES (default 10: reboot-storm runs with 10 nodes
// here and 50 in 'make run') tune the run.
package fake

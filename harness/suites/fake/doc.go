// Package fake holds the Ginkgo suite that runs the scenario catalog on
// the embedded control plane with simulated nodes, for both the bootid
// subject and the legacy negative control. 'make test' runs it and writes
// _output/junit-embedded.xml (Ginkgo's --junit-report) and the HTML report
// under _output/embedded/ (BOOTPROOF_SUITE_REPORT_DIR).
//
// Process 1 starts one control plane in SynchronizedBeforeSuite; every
// Ginkgo process reaches it through its kubeconfig. Each case (scenario x
// subject) is a spec that runs it through package runner, as 'bootproof
// run' does, so their verdicts agree; labels (the subject and the
// scenario's labels) and focus select cases. 'go test' runs them one at a
// time; the ginkgo CLI's --procs runs them on several processes at once
// (go run github.com/onsi/ginkgo/v2/ginkgo run --procs=4 ...: go.mod's pin
// of the library is the CLI's, so their versions agree). Cases that pause
// their subject are Serial. ReportAfterSuite writes the reports from every
// process's cases. BOOTPROOF_SUITE_MAX_NODES (default 10: reboot-storm
// runs with 10 nodes here and 50 in 'make run') caps scenario node counts.
package fake

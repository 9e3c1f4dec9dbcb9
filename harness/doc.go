// Package harness wires bootproof together: cluster providers (the embedded
// control plane in harness/controlplane, kind, an existing kubeconfig), node
// backends, subjects, the CLI (harness/cli) and the Ginkgo e2e suites.
//
// Dependencies point one way: cmd -> harness -> {scenarios, reports, fakes,
// vmprovision, kmm}. Nothing outside harness imports it.
package harness

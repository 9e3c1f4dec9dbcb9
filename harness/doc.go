// Package harness holds what other projects may import to run bootproof
// from Go: the embedded control plane (harness/controlplane, and its
// e2e-framework provider harness/controlplane/e2eprovider), the cluster
// providers the engine runs on (harness/cluster), and the catalog as
// e2e-framework features (harness/e2e); plus the Ginkgo suites. The
// wiring behind the bootproof command (CLI, runner, node backends,
// subjects, runs, kind host and image, benchmarks) is in internal/.
//
// Dependencies point down to {scenarios, reports, fakes, vmprovision,
// kmm}: internal/cli wires harness and internal packages together;
// harness/e2e runs cases through internal/runner, internal/backend and
// internal/subject, and harness/controlplane registers its forced-exit
// cleanup with internal/shutdown. Nothing below harness imports harness
// or internal (depguard).
package harness

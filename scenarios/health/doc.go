// Package health watches the cluster a run's cases share, so that a fault
// of the harness's world is never judged as the subject's: Monitor probes
// the API server's /readyz and kube-controller-manager's leader Lease and
// collects the component exits a FaultReporter cluster (the embedded
// control plane) reports; the scenario engine makes a case whose window
// overlaps a Fault an error.
package health

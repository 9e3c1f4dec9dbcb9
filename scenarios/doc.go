// Package scenarios is bootproof's scenario engine: the scenario format and
// embedded catalog, the timeline driver that reboots nodes at controlled
// speeds, the observer that records Nodes, Leases, worker pods, NMC status
// and kernel ground truth through watches, and the assertions (precondition,
// reload, no extra work, consistency) that judge a run.
//
// It defines the small interfaces it consumes (cluster, node backend,
// subject and optional capabilities); package harness implements them.
package scenarios

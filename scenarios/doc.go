// Package scenarios is bootproof's scenario engine: the scenario format and
// embedded catalog, the timeline driver that reboots nodes at controlled
// speeds and the case's lifecycle around it. Its sub-packages hold the
// rest: observe records Nodes, Leases, worker pods, NMC status and kernel
// ground truth through watches; judging holds the assertions
// (precondition, reload, no extra work, consistency) and the verdict;
// trace is the vocabulary of a case's trace; fileformat reads scenario
// and subject files; health watches the cluster.
//
// It defines the small interfaces it consumes of a cluster and a subject
// (and their optional capabilities); the node-backend interfaces and the
// reboot vocabulary are package nodeapi's, the labels and worker-pod keys
// package contract's, so backends use them without linking the engine.
// Package harness implements them all.
package scenarios

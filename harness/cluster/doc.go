// Package cluster provides the clusters bootproof runs on, as
// scenarios.Cluster: Embedded (the control plane of package controlplane,
// started by the harness) and Kubeconfig (an existing cluster the harness
// starts nothing in).
package cluster

package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bootproof/bootproof/scenarios"
)

// clusterName names a cluster a run starts or joins (--cluster).
type clusterName string

// The clusters a run knows; each registers itself in a file of its own
// (run_cluster_*.go).
const (
	clusterEmbedded   clusterName = "embedded"
	clusterKind       clusterName = "kind"
	clusterKubeconfig clusterName = "kubeconfig"
)

// nodesName names a node backend (--nodes).
type nodesName string

// The node backends a run knows; each registers itself in a file of its
// own (run_nodes_*.go).
const (
	nodesFake    nodesName = "fake"
	nodesLibvirt nodesName = "libvirt"
)

// clusterProvider is one --cluster.
type clusterProvider struct {
	// flags mean something with this cluster only: given with another,
	// they are refused.
	flags []string
	// validate checks the cluster's own flags (nil: none to check).
	validate func(o *runOptions) error
	// start starts the cluster, or connects to it; what it starts it
	// stops through rc.defer_.
	start func(ctx context.Context, rc *runContext) (scenarios.Cluster, error)
}

// nodeProvider is one --nodes.
type nodeProvider struct {
	// grace is the embedded cluster's grace period by default with
	// these nodes.
	grace time.Duration
	// validate checks the backend's own flags (nil: none to check).
	validate func(o *runOptions) error
	// start prepares the backend for cluster cl; dir is the run's
	// report directory, env the run's environment for the report.
	start func(ctx context.Context, rc *runContext, cl scenarios.Cluster, dir string, env map[string]string) (scenarios.Backend, error)
}

var (
	clusterProviders = map[clusterName]clusterProvider{}
	nodeProviders    = map[nodesName]nodeProvider{}
)

// registerCluster makes --cluster kind start with p (from an init of the
// cluster's file).
func registerCluster(kind clusterName, p clusterProvider) {
	if _, dup := clusterProviders[kind]; dup {
		panic(fmt.Sprintf("cluster %s registered twice", kind))
	}
	clusterProviders[kind] = p
}

// registerNodes makes --nodes kind start with p (from an init of the
// backend's file).
func registerNodes(kind nodesName, p nodeProvider) {
	if _, dup := nodeProviders[kind]; dup {
		panic(fmt.Sprintf("node backend %s registered twice", kind))
	}
	nodeProviders[kind] = p
}

// clusterKinds and nodeKinds list what is registered, sorted, for help
// texts and errors.
func clusterKinds() string { return joinSorted(clusterProviders) }
func nodeKinds() string    { return joinSorted(nodeProviders) }

func joinSorted[K ~string, V any](m map[K]V) string {
	var out []string
	for k := range m {
		out = append(out, string(k))
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// clusterOf and nodesOf look up a registered provider: an unknown name
// is a usage error listing the known ones (fail closed).
func clusterOf(name string) (clusterProvider, error) {
	p, ok := clusterProviders[clusterName(name)]
	if !ok {
		return p, withCode(ExitUsage, fmt.Errorf("invalid --cluster %q: accepted: %s", name, clusterKinds()))
	}
	return p, nil
}

func nodesOf(name string) (nodeProvider, error) {
	p, ok := nodeProviders[nodesName(name)]
	if !ok {
		return p, withCode(ExitUsage, fmt.Errorf("invalid --nodes %q: accepted: %s", name, nodeKinds()))
	}
	return p, nil
}

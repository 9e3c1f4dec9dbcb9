package cli

import (
	"fmt"
	"slices"
)

// clusterFlags are the flags that mean something with one --cluster only.
var clusterFlags = []struct{ flag, cluster string }{
	{"kubeconfig", "kubeconfig"}, {"node-credentials", "kubeconfig"},
	{"kind-cluster", "kind"}, {"kind-image", "kind"}, {"kind-load-image-archive", "kind"}, {"retain", "kind"},
}

// checkClusterFlags checks --cluster and refuses a flag of another
// cluster. --kubeconfig without --cluster selects --cluster kubeconfig,
// as kubectl users expect of it.
func (o *runOptions) checkClusterFlags() error {
	if o.changed["kubeconfig"] && !o.changed["cluster"] {
		o.cluster = "kubeconfig"
	}
	if !slices.Contains([]string{"embedded", "kind", "kubeconfig"}, o.cluster) {
		return withCode(ExitUsage, fmt.Errorf("invalid --cluster %q: accepted: embedded, kind, kubeconfig", o.cluster))
	}
	for _, cf := range clusterFlags {
		if o.changed[cf.flag] && o.cluster != cf.cluster {
			return withCode(ExitUsage, fmt.Errorf("--%s applies only with --cluster %s (this run's cluster is %s): drop it or give --cluster %s", cf.flag, cf.cluster, o.cluster, cf.cluster))
		}
	}
	return nil
}

// validateLibvirt checks the VM flags and caps node counts by default.
func (o *runOptions) validateLibvirt() error {
	if err := o.vm.Default(); err != nil {
		return failure(err)
	}
	if err := o.vm.Validate(); err != nil {
		return withCode(ExitUsage, fmt.Errorf("--nodes libvirt: %w", err))
	}
	if !o.maxNodesSet {
		o.maxNodes = DefaultVMMaxNodes
	}
	return nil
}

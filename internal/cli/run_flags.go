package cli

import (
	"fmt"
	"maps"
	"slices"
)

// checkClusterFlags checks --cluster and refuses a flag that belongs to
// another cluster (clusterProvider.flags). --kubeconfig without --cluster
// selects --cluster kubeconfig, as kubectl users expect of it.
func (o *runOptions) checkClusterFlags() error {
	if o.changed["kubeconfig"] && !o.changed["cluster"] {
		o.cluster = string(clusterKubeconfig)
	}
	p, err := clusterOf(o.cluster)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(clusterProviders)) {
		for _, flag := range clusterProviders[name].flags {
			if o.changed[flag] && string(name) != o.cluster {
				return withCode(ExitUsage, fmt.Errorf("--%s applies only with --cluster %s (this run's cluster is %s): drop it or give --cluster %s", flag, name, o.cluster, name))
			}
		}
	}
	if p.validate != nil {
		return p.validate(o)
	}
	return nil
}

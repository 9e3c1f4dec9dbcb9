package cli

import (
	"context"
	"fmt"

	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/scenarios"
)

// --cluster kubeconfig: an existing cluster, whose grace period the run
// is told (--grace-period); its nodes get credentials shared or through
// CSRs (--node-credentials).
func init() {
	registerCluster(clusterKubeconfig, clusterProvider{
		flags: []string{"kubeconfig", "node-credentials"},
		validate: func(o *runOptions) error {
			if o.nodeCreds != "shared" && o.nodeCreds != "csr" {
				return withCode(ExitUsage, fmt.Errorf("invalid --node-credentials %q: accepted: shared, csr", o.nodeCreds))
			}
			return nil
		},
		start: startKubeconfig,
	})
}

func startKubeconfig(ctx context.Context, rc *runContext) (scenarios.Cluster, error) {
	k, err := cluster.NewKubeconfig(ctx, rc.o.kubeconfig, rc.o.grace, rc.o.nodeCreds == "csr")
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	fmt.Fprintf(rc.s.Err, "running against an existing cluster (grace period %s)\n", k.GracePeriod())
	return k, nil
}

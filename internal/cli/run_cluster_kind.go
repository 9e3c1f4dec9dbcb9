package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/reports"
	"github.com/bootproof/bootproof/scenarios"
)

// --cluster kind: a kind cluster of --kind-image, created for the run (or
// --kind-cluster reused), whose own kube-controller-manager judges the
// simulated nodes.
func init() {
	registerCluster(clusterKind, clusterProvider{
		flags: []string{"kind-cluster", "kind-image", "kind-load-image-archive", "retain"},
		start: startKind,
	})
}

func startKind(ctx context.Context, rc *runContext) (scenarios.Cluster, error) {
	o, s := rc.o, rc.s
	if err := cluster.KindPreflight(ctx); err != nil {
		return nil, kindFailure(err)
	}
	fmt.Fprintf(s.Err, "starting kind cluster (image %s, grace period %s)\n", o.kindImage, rc.plan.grace)
	start := time.Now()
	k, err := cluster.StartKind(ctx, cluster.KindConfig{Name: o.kindCluster, Reuse: o.kindCluster != "", Retain: o.retain,
		Image: o.kindImage, GracePeriod: rc.plan.grace, MonitorPeriod: o.monitor, LogDir: o.reportDir, ImageArchives: o.kindArchives})
	if err != nil {
		return nil, kindFailure(err)
	}
	fmt.Fprintf(s.Err, "kind cluster %s ready in %s\n", k.ClusterName(), reports.FormatDuration(time.Since(start)))
	rc.defer_(func() { _ = k.Stop(rc.failed) })
	return k, nil
}

// kindFailure is failure, except that a host not set up for kind (no
// container engine, the node image missing, privileged containers
// refused) is a usage error, exit 2, like missing control-plane
// binaries: the user fixes the machine, and no run was attempted.
func kindFailure(err error) error {
	if errors.Is(err, cluster.ErrNoContainerEngine) || errors.Is(err, cluster.ErrKindImageMissing) || errors.Is(err, cluster.ErrPrivilegedRefused) {
		return withCode(ExitUsage, err)
	}
	return failure(err)
}

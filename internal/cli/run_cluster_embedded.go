package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/reports"
	"github.com/bootproof/bootproof/scenarios"
)

// --cluster embedded: etcd, kube-apiserver and kube-controller-manager
// started here, with the run's grace period.
func init() {
	registerCluster(clusterEmbedded, clusterProvider{start: startEmbedded})
}

func startEmbedded(ctx context.Context, rc *runContext) (scenarios.Cluster, error) {
	o, s := rc.o, rc.s
	cfg := controlplane.Config{GracePeriod: rc.plan.grace, MonitorPeriod: o.monitor, BinDir: o.binDir, CertValidity: o.certValidity}
	// The settings first, then the binaries: a bad flag is named even
	// where the binaries are missing.
	if err := cfg.Default().Validate(); err != nil {
		return nil, withCode(ExitUsage, err)
	}
	bins, err := controlplane.FindBinaries(o.binDir)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	fmt.Fprintf(s.Err, "control-plane binaries: %s\n", describeBinaries(bins))
	fmt.Fprintf(s.Err, "starting the embedded control plane (grace period %s, monitor period %s)\n", rc.plan.grace, o.monitor)
	start := time.Now()
	e, err := cluster.StartEmbedded(ctx, cfg)
	if err != nil {
		return nil, failure(err)
	}
	rc.defer_(e.Stop)
	fmt.Fprintf(s.Err, "embedded control plane ready in %s\n", reports.FormatDuration(time.Since(start)))
	logr.FromContextOrDiscard(ctx).Info("embedded control plane ready", "apiserver", e.CP.APIServerURL(), "dir", e.CP.Dir(),
		"gracePeriod", e.CP.Config().GracePeriod, "monitorPeriod", e.CP.Config().MonitorPeriod)
	return e, nil
}

// describeBinaries names the control-plane binaries a run uses: their
// directory when they share one, else each path.
func describeBinaries(b controlplane.Binaries) string {
	names := controlplane.BinEtcd + ", " + controlplane.BinKubeAPIServer + ", " + controlplane.BinKubeControllerManager
	if d := filepath.Dir(b.Etcd); d == filepath.Dir(b.KubeAPIServer) && d == filepath.Dir(b.KubeControllerManager) {
		return names + " in " + d
	}
	return strings.Join([]string{b.Etcd, b.KubeAPIServer, b.KubeControllerManager}, ", ")
}

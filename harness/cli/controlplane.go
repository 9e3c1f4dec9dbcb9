package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/bootproof/bootproof/harness/controlplane"
)

func newControlPlaneCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "controlplane",
		Short: "Run the embedded control plane (etcd, kube-apiserver, kube-controller-manager)",
		RunE:  runGroup,
	}
	cmd.AddCommand(newControlPlaneUpCommand(s))
	return cmd
}

type upOptions struct {
	cfg           controlplane.Config
	kubeconfigOut string
}

func newControlPlaneUpCommand(s Streams) *cobra.Command {
	o := upOptions{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the embedded control plane and serve until SIGINT or SIGTERM",
		Long: `Starts etcd, kube-apiserver and kube-controller-manager on 127.0.0.1 with
fresh PKI, RBAC, the Node authorizer and NodeRestriction, prints one line with
"ready" and the admin kubeconfig path, and serves until SIGINT or SIGTERM. Then
it stops every process it started and exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return controlPlaneUp(cmd, s, o)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.cfg.GracePeriod, "grace-period", 8*time.Second, "kube-controller-manager --node-monitor-grace-period")
	f.DurationVar(&o.cfg.MonitorPeriod, "monitor-period", time.Second, "kube-controller-manager --node-monitor-period")
	f.StringSliceVar(&o.cfg.Controllers, "controllers", controlplane.DefaultControllers, "kube-controller-manager controllers to run")
	f.StringVar(&o.cfg.Dir, "dir", "", "run directory for PKI, kubeconfigs and logs, kept after exit (default: a temporary directory, removed at exit)")
	f.StringVar(&o.cfg.BinDir, "bin-dir", "", "directory holding etcd, kube-apiserver and kube-controller-manager (default: $"+controlplane.EnvBinDir+", $"+controlplane.EnvKubebuilderAssets+", ./bin)")
	f.DurationVar(&o.cfg.StartTimeout, "start-timeout", controlplane.DefaultStartTimeout, "how long to wait for the control plane to become ready")
	f.StringVar(&o.kubeconfigOut, "kubeconfig-out", "", "also write the admin kubeconfig here (mode 0600; removed at exit, since it points at a cluster that is gone)")
	return cmd
}

func controlPlaneUp(cmd *cobra.Command, s Streams, o upOptions) error {
	ctx := cmd.Context()
	cp, err := controlplane.Start(ctx, o.cfg)
	if err != nil {
		return withCode(ExitInfra, err)
	}
	defer cp.Stop()
	kubeconfig := cp.Kubeconfig()
	if o.kubeconfigOut != "" {
		data, err := os.ReadFile(kubeconfig)
		if err == nil {
			err = os.WriteFile(o.kubeconfigOut, data, 0o600)
		}
		if err != nil {
			return withCode(ExitInfra, fmt.Errorf("--kubeconfig-out %s: %w", o.kubeconfigOut, err))
		}
		defer os.Remove(o.kubeconfigOut)
		kubeconfig = o.kubeconfigOut
	}
	c := cp.Config()
	fmt.Fprintf(s.Out, "control plane ready: kubeconfig %s (apiserver %s, grace period %s, monitor period %s, logs %s/logs); Ctrl-C stops it\n",
		kubeconfig, cp.APIServerURL(), c.GracePeriod, c.MonitorPeriod, cp.Dir())
	select {
	case <-ctx.Done():
		fmt.Fprintln(s.Out, "stopping control plane")
		cp.Stop()
		fmt.Fprintln(s.Out, "control plane stopped")
		return nil
	case <-cp.Died():
		return withCode(ExitInfra, cp.Err())
	}
}

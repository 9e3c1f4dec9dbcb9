package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	cmd.AddCommand(newControlPlaneUpCommand(s), newControlPlaneBuildCommand(s), newControlPlanePathCommand(s))
	return cmd
}

type upOptions struct {
	cfg           controlplane.Config
	kubeconfigOut string
	force         bool
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
			if err := refuseZero(cmd, "grace-period", "monitor-period", "start-timeout", "cert-validity"); err != nil {
				return err
			}
			return controlPlaneUp(cmd, s, o)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.cfg.GracePeriod, "grace-period", 8*time.Second, "kube-controller-manager --node-monitor-grace-period")
	f.DurationVar(&o.cfg.MonitorPeriod, "monitor-period", time.Second, "kube-controller-manager --node-monitor-period")
	f.StringSliceVar(&o.cfg.Controllers, "controllers", controlplane.DefaultControllers, "kube-controller-manager controllers to run")
	f.StringVar(&o.cfg.Dir, "dir", "", "run directory for PKI, kubeconfigs and logs, kept after exit (default: a temporary directory, removed at exit)")
	f.StringVar(&o.cfg.BinDir, "bin-dir", "", binDirHelp)
	f.DurationVar(&o.cfg.CertValidity, "cert-validity", controlplane.DefaultCertValidity, "how long the cluster's certificates are valid; it stops working after that")
	f.DurationVar(&o.cfg.StartTimeout, "start-timeout", controlplane.DefaultStartTimeout, "how long to wait for the control plane to become ready")
	f.StringVar(&o.kubeconfigOut, "kubeconfig-out", "", "also write the admin kubeconfig here (mode 0600; removed at exit, since it points at a cluster that is gone); an existing file is refused unless --force")
	f.BoolVar(&o.force, "force", false, "with --kubeconfig-out: replace an existing file (which is then kept at exit)")
	return cmd
}

func controlPlaneUp(cmd *cobra.Command, s Streams, o upOptions) error {
	ctx := cmd.Context()
	if err := checkKubeconfigOut(o.kubeconfigOut, o.force); err != nil {
		return err
	}
	cp, err := controlplane.Start(ctx, o.cfg)
	if err != nil {
		return failure(err)
	}
	defer cp.Stop()
	kubeconfig := cp.Kubeconfig()
	if o.kubeconfigOut != "" {
		remove, err := writeKubeconfigOut(kubeconfig, o.kubeconfigOut, o.force)
		if err != nil {
			return err
		}
		defer remove()
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
		return failure(cp.Err())
	}
}

// checkKubeconfigOut refuses an existing --kubeconfig-out file unless
// force is set, before the control plane starts.
func checkKubeconfigOut(path string, force bool) error {
	if path == "" || force {
		return nil
	}
	if _, err := os.Lstat(path); err == nil {
		return withCode(ExitUsage, fmt.Errorf("--kubeconfig-out %s exists: give another path, or --force to replace it", path))
	}
	return nil
}

// writeKubeconfigOut copies the kubeconfig at src to dst (mode 0600). A
// new file is created exclusively (O_EXCL: never through a file or link
// another process put there meanwhile); with force an existing one is
// replaced by a rename. The returned func, run at exit, removes dst only
// if this run created it and it is still the same file: never a file
// that was there before, nor one something else put in its place.
func writeKubeconfigOut(src, dst string, force bool) (remove func(), err error) {
	fail := func(err error) (func(), error) {
		return nil, failure(fmt.Errorf("--kubeconfig-out %s: %w", dst, err))
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return fail(err)
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		if !force {
			return nil, withCode(ExitUsage, fmt.Errorf("--kubeconfig-out %s exists: give another path, or --force to replace it", dst))
		}
		if err := replaceFile(dst, data); err != nil {
			return fail(err)
		}
		return func() {}, nil
	}
	if err != nil {
		return fail(err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	created, serr := os.Stat(dst)
	if err = errors.Join(err, serr); err != nil {
		_ = os.Remove(dst)
		return fail(err)
	}
	return func() {
		// Same inode, size and modification time: an inode number
		// reused by a new file does not pass for ours.
		if now, err := os.Lstat(dst); err == nil && os.SameFile(created, now) &&
			now.Size() == created.Size() && now.ModTime().Equal(created.ModTime()) {
			_ = os.Remove(dst)
		}
	}, nil
}

// replaceFile writes data (mode 0600) to a temporary file next to path
// and renames it over path.
func replaceFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

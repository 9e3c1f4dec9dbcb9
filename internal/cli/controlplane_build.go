package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cpbuild"
)

// binDirHelp says where the control-plane binaries are looked for.
const binDirHelp = "directory holding etcd, kube-apiserver and kube-controller-manager (default: $" + controlplane.EnvBinDir +
	", the checkout's bin/, this executable's directory, the cache 'controlplane build' fills ('controlplane path'), then etcd and kube-apiserver from $" +
	controlplane.EnvKubebuilderAssets + " when their versions fit)"

func newControlPlaneBuildCommand(s Streams) *cobra.Command {
	var dir string
	var printLdflags bool
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the pinned etcd, kube-apiserver and kube-controller-manager into the user's cache (needs the go command)",
		Long: `Builds the control plane's binaries from the module pins inside this bootproof
(k8s.io/kubernetes ` + cpbuild.KubernetesVersion() + `, etcd ` + cpbuild.EtcdVersion() + `) with the go command on $PATH,
fetching the modules from the Go module proxy, into --dir (default: the per-user
cache that 'controlplane path' prints, where 'run' and 'controlplane up' look).
A binary already built from the same pins is kept. When $` + controlplane.EnvKubebuilderAssets + `
holds an envtest etcd and kube-apiserver whose versions fit, only
kube-controller-manager is built. A first build takes about 11 minutes on 2 cores.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if printLdflags {
				fmt.Fprintln(s.Out, cpbuild.Ldflags())
				return nil
			}
			return controlPlaneBuild(cmd, s, dir)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory that receives the binaries (default: 'controlplane path')")
	cmd.Flags().BoolVar(&printLdflags, "print-ldflags", false, "print the linker flags of kube-apiserver and kube-controller-manager and exit (the kind node image's build takes them)")
	_ = cmd.Flags().MarkHidden("print-ldflags")
	return cmd
}

func controlPlaneBuild(cmd *cobra.Command, s Streams, dir string) error {
	if dir == "" {
		d, err := cpbuild.CacheDir()
		if err != nil {
			return withCode(ExitUsage, fmt.Errorf("no --dir and %w", err))
		}
		dir = d
	}
	o := cpbuild.Options{Dir: dir, Out: s.Out}
	if assets := os.Getenv(controlplane.EnvKubebuilderAssets); assets != "" {
		fit := true
		for _, b := range []string{controlplane.BinEtcd, controlplane.BinKubeAPIServer} {
			if err := controlplane.EnvtestFit(filepath.Join(assets, b)); err != nil {
				fmt.Fprintf(s.Out, "controlplane: not using $%s: %v\n", controlplane.EnvKubebuilderAssets, err)
				fit = false
				break
			}
		}
		if fit {
			fmt.Fprintf(s.Out, "controlplane: etcd and kube-apiserver from $%s (%s) fit; building kube-controller-manager only\n", controlplane.EnvKubebuilderAssets, assets)
			o.Only = []string{controlplane.BinKubeControllerManager}
		}
	}
	if err := cpbuild.Build(cmd.Context(), o); err != nil {
		return withCode(ExitInfra, err)
	}
	return nil
}

func newControlPlanePathCommand(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "path",
		Short: "Print the directory 'controlplane build' writes to by default",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			d, err := cpbuild.CacheDir()
			if err != nil {
				return withCode(ExitUsage, err)
			}
			fmt.Fprintln(s.Out, d)
			return nil
		},
	}
}

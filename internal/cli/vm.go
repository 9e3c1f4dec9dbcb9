package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bootproof/bootproof/internal/backend"
)

func newImageCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "The VM guest image: a distro kernel and an initramfs with bootproof-agent as /init",
		Args:  cobra.NoArgs,
		RunE:  runGroup,
	}
	var c backend.LibvirtConfig
	build := &cobra.Command{
		Use:   "build",
		Short: "Prepare what VM runs boot, once: the guest kernel (downloaded into the cache), its bootable ELF, the initramfs (by content hash)",
		Long: `Finds the guest kernel (--kernel-dir) or downloads the kernel package with
apt-get into the cache, writes the kernel's uncompressed ELF the domains boot
at its PVH entry next to its bzImage, and builds the main initramfs:
bootproof-agent as /init, the virtio network modules and the test modules
with their modules.dep. 'bootproof run --nodes libvirt' does the same and
reuses what is cached; this command prepares the cache ahead of a run
('make e2e-libvirt' runs it before its tests, so no test or case spends
its time downloading) and shows what the image holds. Run again, it finds
everything cached and says so.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.Default(); err != nil {
				return failure(err)
			}
			if err := c.Validate(); err != nil {
				return withCode(ExitUsage, err)
			}
			c.Progress = s.Err
			g, err := backend.PrepareGuest(cmd.Context(), c)
			if err != nil {
				return failure(err)
			}
			printGuest(s, g)
			return nil
		},
	}
	f := build.Flags()
	addImageFlags(f, &c, "")
	f.StringSliceVar(&c.Modules, "module", nil, "modules to include with their dependencies (default: virtio network, dummy, bonding, team_mode_roundrobin)")
	cmd.AddCommand(build)
	return cmd
}

// printGuest says what 'image build' prepared and whether it was cached.
func printGuest(s Streams, g *backend.Guest) {
	img := g.Image
	state := "built"
	if img.Cached {
		state = "cached"
	}
	boot := "the bzImage"
	switch {
	case g.PVH != "":
		boot = "the uncompressed kernel at its PVH entry"
	case g.NoPVH != nil:
		boot = "the bzImage: " + g.NoPVH.Error()
	}
	fmt.Fprintf(s.Out, "kernel:  %s (%s, %s)\nboot:    %s (%s)\nimage:   %s (%s)\nsha256:  %s\nmodules: %s\n",
		img.Kernel.Vmlinuz(), img.Kernel.Version, g.Kernel, g.Boot(), boot, img.Path, state, img.Hash, strings.Join(img.Manifest.Modules, " "))
}

func newVMCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "vm",
		Short: "Manage bootproof's libvirt domains",
		Args:  cobra.NoArgs,
		RunE:  runGroup,
	}
	var uri, prefix string
	cleanup := &cobra.Command{
		Use:   "cleanup",
		Short: "Destroy and undefine the libvirt domains a crashed run left behind",
		Long: `Destroys and undefines the libvirt domains whose name starts with --prefix
(bootproof names its domains bootproof-<run>-<node>) and whose run is gone:
each domain's description names the process that defined it, and the domains
of a run still going are kept. A run removes its own domains, on Ctrl-C too;
a killed run's guests are stopped by libvirt when its connection goes, and
its definitions are removed by the next VM run or by this command.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if !strings.HasPrefix(prefix, "bootproof-") {
				return withCode(ExitUsage, fmt.Errorf("invalid --prefix %q: accepted: a prefix starting with bootproof- (only bootproof's own domains are removed)", prefix))
			}
			if err := backend.CheckLibvirtURI(uri); err != nil {
				return withCode(ExitUsage, fmt.Errorf("--libvirt-uri: %w", err))
			}
			removed, err := backend.CleanupLibvirt(uri, prefix)
			for _, d := range removed {
				fmt.Fprintf(s.Out, "removed %s\n", d)
			}
			if err != nil {
				return failure(err)
			}
			if len(removed) == 0 {
				fmt.Fprintf(s.Out, "no domain named %s* is defined\n", prefix)
			}
			return nil
		},
	}
	cleanup.Flags().StringVar(&uri, "libvirt-uri", "", "the libvirt connection (default qemu:///system)")
	cleanup.Flags().StringVar(&prefix, "prefix", "bootproof-", "remove domains whose name starts with this")
	cmd.AddCommand(cleanup)
	return cmd
}

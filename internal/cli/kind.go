package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/internal/kindimage"
)

func newKindCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kind",
		Short: "Images for kind clusters, built on this machine with no registry",
		Args:  cobra.NoArgs,
		RunE:  runGroup,
	}
	cmd.AddCommand(newKindNodeImageCommand(s), newKindOperatorImageCommand(s))
	return cmd
}

func newKindNodeImageCommand(s Streams) *cobra.Command {
	var c kindimage.Config
	cmd := &cobra.Command{
		Use:   "build-node-image",
		Short: "Build a kind node image from the binaries of tools/kindnode/build.sh and a Debian base (root, docker, debootstrap)",
		Long: `Builds a kind node image with docker and no registry: a Debian base
installed with debootstrap, kind's own entrypoint and units, the node
binaries (kubelet, kubeadm, kubectl, containerd, runc, crictl, CNI plugins)
and the control-plane images kubeadm asks for (apiserver, controller-manager,
scheduler, kube-proxy, etcd, pause; not CoreDNS, whose addon bootproof's
kind clusters skip) imported into the node's containerd. 'make kind-image' builds the binaries first and runs this only
when the pins under tools/ changed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.Progress = s.Err
			c.Default()
			if err := c.Validate(); err != nil {
				return withCode(ExitUsage, fieldErrorsWithFlags(err, kindImageFlags))
			}
			res, err := kindimage.Build(cmd.Context(), c, kindimage.ExecRunner{})
			if err != nil {
				return withCode(ExitInfra, err)
			}
			fmt.Fprintf(s.Out, "kind node image %s (Kubernetes %s)\nimages: %s\n", res.Tag, res.KubernetesVersion, strings.Join(res.Images, " "))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.BinDir, "bin-dir", "bin/kindnode", "the binaries tools/kindnode/build.sh built")
	f.StringVar(&c.Tag, "tag", "", "the node image's name (required), e.g. bootproof/kind-node:v1.37.2")
	f.StringVar(&c.WorkDir, "work-dir", "", "debootstrap caches and image archives (default $XDG_CACHE_HOME/bootproof/kind-image, or ~/.cache/...)")
	f.StringVar(&c.Suite, "suite", "", "Debian release of the base (default bookworm)")
	f.StringVar(&c.Mirror, "mirror", "", "Debian archive debootstrap installs from (default http://deb.debian.org/debian)")
	f.StringVar(&c.Keyring, "keyring", "", "the archive keys the Debian Release file's signature must verify with (default "+kindimage.DebianKeyring+", package debian-archive-keyring)")
	f.StringToStringVar(&c.Labels, "label", nil, "KEY=VALUE labels of the node image (repeatable); 'make kind-image' sets dev.bootproof.checkout")
	f.BoolVar(&c.Prune, "prune", false, "after the build, remove older images of the tag's repository that carry every --label (what this checkout built before); needs --label")
	f.StringVar(&c.EtcdVersion, "etcd-version", "", "the version of the etcd in --bin-dir (e.g. 3.6.16) where it is not the one kubeadm asks for: its image gets that tag, and clusters of the node image run it (default: kubeadm's)")
	return cmd
}

func newKindOperatorImageCommand(s Streams) *cobra.Command {
	var o kindimage.OperatorImage
	cmd := &cobra.Command{
		Use:   "build-operator-image",
		Short: "Write an image archive holding this bootproof executable, to run 'bootproof kmm' as a Deployment",
		Long: `Writes an image archive (docker save format) whose only file is this
bootproof executable, at /bootproof, with 'bootproof' as its entrypoint. 'bootproof
run --cluster kind --kind-load-image-archive FILE' loads it into the kind
cluster's nodes, where a Deployment (examples/deploy/) runs 'bootproof kmm'
from it with imagePullPolicy: Never. The executable must be statically linked
('make build' builds it so).`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := o.Validate(); err != nil {
				return withCode(ExitUsage, fieldErrorsWithFlags(err, operatorImageFlags))
			}
			if err := o.Write(); err != nil {
				return withCode(ExitInfra, err)
			}
			fmt.Fprintf(s.Out, "image %s written to %s\n", o.Ref, o.Out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Ref, "tag", kindimage.DefaultOperatorRef, "the image's name")
	f.StringVar(&o.Out, "out", "", "the archive to write (required)")
	f.StringVar(&o.Executable, "executable", "", "the bootproof executable to put in (default: this one)")
	return cmd
}

var (
	kindImageFlags     = map[string]string{"BinDir": "--bin-dir", "Tag": "--tag", "WorkDir": "--work-dir", "Suite": "--suite", "Mirror": "--mirror", "Keyring": "--keyring", "Labels": "--label", "Prune": "--prune", "EtcdVersion": "--etcd-version"}
	operatorImageFlags = map[string]string{"Ref": "--tag", "Out": "--out", "Executable": "--executable"}
)

// fieldErrorsWithFlags renders each contract.FieldError joined in err
// with the flag that set its field (flags maps field paths' roots to
// flags); other errors are kept as they are.
func fieldErrorsWithFlags(err error, flags map[string]string) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var lines []string
	for _, e := range errs {
		var fe contract.FieldError
		if !errors.As(e, &fe) || fe.FieldPath() == nil {
			lines = append(lines, e.Error())
			continue
		}
		name := fe.FieldPath().String()
		if flag, ok := flags[fe.FieldPath().Root().String()]; ok {
			name = flag
		}
		lines = append(lines, fe.Render(name))
	}
	return &flagError{msg: strings.Join(lines, "; "), err: err}
}

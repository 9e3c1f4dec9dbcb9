package kindimage

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/bootproof/bootproof/contract"
)

// Binaries every node image needs in Config.BinDir, as
// tools/kindnode/build.sh names them.
var (
	// NodeBinaries go into the node's filesystem.
	NodeBinaries = []string{"kubelet", "kubeadm", "kubectl", "containerd", "ctr", "containerd-shim-runc-v2", "runc", "crictl",
		"host-local", "loopback", "ptp", "portmap"}
	// ImageBinaries go into the control-plane images.
	ImageBinaries = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "etcd", "pause"}
)

// Debian packages of the node (kind's base image list, without the
// storage-test packages) and of the kube-proxy image (what kube-proxy's
// iptables and nftables modes run).
var (
	NodePackages  = []string{"systemd", "conntrack", "iptables", "nftables", "iproute2", "ethtool", "util-linux", "mount", "kmod", "libseccomp2", "pigz", "bash", "ca-certificates", "curl", "jq", "procps"}
	ProxyPackages = []string{"iptables", "nftables", "conntrack", "kmod"}
)

// Config configures Build.
type Config struct {
	// BinDir holds the binaries of NodeBinaries and ImageBinaries
	// (tools/kindnode/build.sh writes bin/kindnode).
	BinDir string
	// Tag names the node image, e.g. bootproof/kind-node:v1.37.2-<stamp>.
	Tag string
	// WorkDir keeps the debootstrap caches and the image archives between
	// builds; default bootproof/kind-image in the user's cache directory
	// ($XDG_CACHE_HOME, ~/.cache), so a fresh clone reuses them.
	WorkDir string
	// Suite and Mirror are the Debian release and archive debootstrap
	// installs from; default bookworm from http://deb.debian.org/debian.
	Suite  string
	Mirror string
	// Keyring holds the archive keys debootstrap checks the Release
	// file's signature with (it refuses an unsigned or unverifiable
	// archive); default Debian's, /usr/share/keyrings/debian-archive-keyring.gpg
	// (package debian-archive-keyring, which 'make deps-kind' installs).
	Keyring string
	// Labels are set on the node image. 'make kind-image' labels what
	// it builds with its checkout (dev.bootproof.checkout), and prunes
	// only superseded images of that checkout.
	Labels map[string]string
	// Prune, after a successful build, removes the images of Tag's
	// repository that carry every one of Labels (with the same values)
	// and are not Tag: what this checkout built before. Images without
	// them (another checkout's, built by hand) are never touched. It
	// needs Labels.
	Prune bool
	// PodSubnet is the node's pod range, written into its CNI
	// configuration; default 10.244.0.0/24, the first node range of kind's
	// default pod subnet (10.244.0.0/16) on a one-node cluster.
	PodSubnet string
	// EtcdVersion is the version of BinDir's etcd ("3.6.16") where it is
	// not the one kubeadm asks for: its image is tagged EtcdImageTag of it,
	// and the node image's LabelEtcdImageTag tells kubeadm to run that
	// one. bootproof's node image carries the embedded plane's etcd (its
	// version pinned in tools/controlplane/etcd), so one etcd is built for
	// both. Default: the version kubeadm asks for, no label.
	EtcdVersion string
	// Docker is the container engine's command; default docker.
	Docker string
	// Progress receives a line per step with its duration; default
	// io.Discard.
	Progress io.Writer
}

// Default fills in the defaults.
func (c *Config) Default() {
	if c.WorkDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = ".cache"
		}
		c.WorkDir = filepath.Join(dir, "bootproof", "kind-image")
	}
	c.Suite = cmp.Or(c.Suite, "bookworm")
	c.Mirror = cmp.Or(c.Mirror, "http://deb.debian.org/debian")
	c.Keyring = cmp.Or(c.Keyring, DebianKeyring)
	c.PodSubnet = cmp.Or(c.PodSubnet, "10.244.0.0/24")
	c.Docker = cmp.Or(c.Docker, "docker")
	if c.Progress == nil {
		c.Progress = io.Discard
	}
}

// Validate checks the configuration and that every binary is in BinDir.
// It joins a *contract.InputError per field (BinDir, Tag, ...).
func (c *Config) Validate() error {
	var errs []error
	if c.Tag == "" {
		errs = append(errs, contract.NewInputError("Tag", "", "required: the node image's name, e.g. bootproof/kind-node:v1.37.2", nil))
	} else if c.Tag != strings.ToLower(c.Tag) || strings.ContainsAny(c.Tag, " @") {
		errs = append(errs, contract.NewInputError("Tag", c.Tag, "accepted: a lower-case image name with a tag and no digest", nil))
	}
	if c.EtcdVersion != "" && !etcdVersion.MatchString(c.EtcdVersion) {
		errs = append(errs, contract.NewInputError("EtcdVersion", c.EtcdVersion, "accepted: an etcd release version without a v or an image revision, e.g. 3.6.16", nil))
	}
	for _, k := range slices.Sorted(maps.Keys(c.Labels)) {
		if !labelKey.MatchString(k) || !labelValue.MatchString(c.Labels[k]) {
			errs = append(errs, contract.NewInputError("Labels", k+"="+c.Labels[k],
				"accepted: KEY=VALUE, the key of letters, digits and . _ - /, the value without spaces or quotes", nil))
		}
	}
	if c.Prune && len(c.Labels) == 0 {
		errs = append(errs, contract.NewInputError("Prune", "true", "needs Labels: it removes only older images carrying them (e.g. dev.bootproof.checkout=<hash>)", nil))
	}
	if c.BinDir == "" {
		errs = append(errs, contract.NewInputError("BinDir", "", "required: the binaries of tools/kindnode/build.sh (bin/kindnode)", nil))
	} else if missing := missingBinaries(c.BinDir); len(missing) > 0 {
		errs = append(errs, contract.NewInputError("BinDir", c.BinDir,
			fmt.Sprintf("missing %s: build them with tools/kindnode/build.sh ('make kind-image' does)", strings.Join(missing, ", ")), nil))
	}
	return errors.Join(errs...)
}

// DebianKeyring is Debian's archive keyring (package debian-archive-keyring).
const DebianKeyring = "/usr/share/keyrings/debian-archive-keyring.gpg"

var (
	labelKey   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)
	labelValue = regexp.MustCompile(`^[^\s"'\\]*$`)
)

func missingBinaries(dir string) []string {
	var missing []string
	for _, b := range append(append([]string{}, NodeBinaries...), ImageBinaries...) {
		st, err := os.Stat(filepath.Join(dir, b))
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	return missing
}

// ErrNotRoot is returned when Build runs as another user than root:
// debootstrap and the node's file ownership need root.
var ErrNotRoot = errors.New("building the kind node image needs root (debootstrap installs the Debian base): run 'make kind-image' as root")

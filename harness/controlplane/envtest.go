package controlplane

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/bootproof/bootproof/harness/controlplane/cpbuild"
)

// versionTimeout bounds '<binary> --version'.
const versionTimeout = 10 * time.Second

// versionPattern finds "vMAJOR.MINOR" or "MAJOR.MINOR" in a --version line
// ("Kubernetes v1.37.2", "etcd Version: 3.6.16").
var versionPattern = regexp.MustCompile(`v?(\d+)\.(\d+)\.\d+`)

// EnvtestFit checks an envtest binary (etcd or kube-apiserver from
// $KUBEBUILDER_ASSETS) against the pinned kube-controller-manager: a
// kube-apiserver of the pinned minor version or the next one (the
// controller manager may be one minor version older than the API server,
// never newer), an etcd 3.5 or later of major version 3. The binary is
// asked with --version. Its error says what was found and what fits.
func EnvtestFit(path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w", path, err)
	}
	m := versionPattern.FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("%s --version printed no version: %q", path, firstLine(out))
	}
	major, _ := strconv.Atoi(string(m[1]))
	minor, _ := strconv.Atoi(string(m[2]))
	switch filepath.Base(path) {
	case BinKubeAPIServer:
		pinned := cpbuild.KubernetesVersion()
		pm := versionPattern.FindStringSubmatch(pinned)
		pMinor, _ := strconv.Atoi(pm[2])
		if major != 1 || (minor != pMinor && minor != pMinor+1) {
			return fmt.Errorf("%s is %d.%d: accepted: 1.%d or 1.%d (kube-controller-manager is %s and may be one minor version older than the API server, never newer)",
				path, major, minor, pMinor, pMinor+1, pinned)
		}
	case BinEtcd:
		if major != 3 || minor < 5 {
			return fmt.Errorf("%s is %d.%d: accepted: etcd 3.5 or later 3.x (the pinned one is %s)", path, major, minor, cpbuild.EtcdVersion())
		}
	default:
		return fmt.Errorf("%s: only etcd and kube-apiserver are taken from $%s", path, EnvKubebuilderAssets)
	}
	return nil
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' {
			return string(b[:i])
		}
	}
	return string(b)
}

package kindimage

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"
)

// kindBase holds kind's base-image files (kindbase/ORIGIN.md).
//
//go:embed all:kindbase
var kindBase embed.FS

// Where the node's binaries go, as in kind's base and node images.
var nodeBinaryPaths = map[string]string{
	"kubelet": "/usr/bin/kubelet", "kubeadm": "/usr/bin/kubeadm", "kubectl": "/usr/bin/kubectl",
	"containerd": "/usr/local/bin/containerd", "ctr": "/usr/local/bin/ctr",
	"containerd-shim-runc-v2": "/usr/local/bin/containerd-shim-runc-v2", "crictl": "/usr/local/bin/crictl",
	"runc":       "/usr/local/sbin/runc",
	"host-local": "/opt/cni/bin/host-local", "loopback": "/opt/cni/bin/loopback", "ptp": "/opt/cni/bin/ptp", "portmap": "/opt/cni/bin/portmap",
}

// Units enabled in the node (kind's Dockerfile: systemctl enable), and
// masked.
var (
	enabledUnits = []string{"kubelet.service", "containerd.service", "undo-mount-hacks.service"}
	maskedUnits  = []string{"systemd-binfmt.service"}
)

// Unit links kind's Dockerfile removes so that only what a node needs
// starts (globs relative to the root).
var removedWants = []string{
	"lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service",
	"lib/systemd/system/multi-user.target.wants/*",
	"etc/systemd/system/*.wants/*",
	"lib/systemd/system/local-fs.target.wants/*",
	"lib/systemd/system/sockets.target.wants/*udev*",
	"lib/systemd/system/sockets.target.wants/*initctl*",
	"lib/systemd/system/basic.target.wants/*",
}

// CNIConfig is the node's CNI configuration: kindnet's plugins (ptp with
// host-local addresses, portmap) for the node's pod range.
func CNIConfig(podSubnet string) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "bootproof",
		"plugins": []any{
			map[string]any{"type": "ptp", "ipMasq": true, "mtu": 1500, "ipam": map[string]any{
				"type": "host-local", "dataDir": "/run/cni-ipam-state",
				"routes": []any{map[string]any{"dst": "0.0.0.0/0"}},
				"ranges": []any{[]any{map[string]any{"subnet": podSubnet}}},
			}},
			map[string]any{"type": "portmap", "capabilities": map[string]any{"portMappings": true}},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// defaultCNIManifest is what kind applies as the cluster's CNI
// (/kind/manifests/default-cni.yaml): the node's CNI is configured
// statically, so the manifest only records that.
const defaultCNIManifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: bootproof-cni
  namespace: kube-system
data:
  README: |
    This kind node image was built by bootproof (internal/kindimage). Its CNI
    is the reference plugins ptp, host-local and portmap, configured
    statically in /etc/cni/net.d/10-bootproof.conflist for a one-node
    cluster; there is no CNI daemon.
`

var sandboxImageLine = regexp.MustCompile(`(?m)^(\s*sandbox_image\s*=\s*)".*"$`)

// ContainerdConfig is kind's containerd configuration with the sandbox
// (pause) image replaced by the one given.
func ContainerdConfig(kindConfig []byte, pause string) ([]byte, error) {
	if !sandboxImageLine.Match(kindConfig) {
		return nil, fmt.Errorf("kind's containerd config.toml has no sandbox_image line to set to %s", pause)
	}
	return sandboxImageLine.ReplaceAll(kindConfig, []byte(`${1}"`+pause+`"`)), nil
}

// CRIBaseSpec turns 'ctr oci spec' into kind's base runtime spec: the
// createContainer hook that mounts the node's product files, and no
// rlimits.
func CRIBaseSpec(ctrSpec []byte) ([]byte, error) {
	var spec map[string]any
	if err := json.Unmarshal(ctrSpec, &spec); err != nil {
		return nil, fmt.Errorf("decode ctr oci spec: %w", err)
	}
	hooks, _ := spec["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	cc, _ := hooks["createContainer"].([]any)
	hooks["createContainer"] = append(cc, map[string]any{"path": "/kind/bin/mount-product-files.sh"})
	spec["hooks"] = hooks
	if proc, ok := spec["process"].(map[string]any); ok {
		delete(proc, "rlimits")
	}
	return json.MarshalIndent(spec, "", "    ")
}

// writeKindBase copies kind's base files into root: scripts executable
// (kind/bin, usr/local/bin), the rest 0644.
func writeKindBase(root *os.Root) error {
	return fs.WalkDir(kindBase, "kindbase", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, "kindbase")
		if rel == "" || rel == "/ORIGIN.md" {
			return nil
		}
		if d.IsDir() {
			return root.MkdirAll(inRoot(rel), 0o755)
		}
		data, err := kindBase.ReadFile(p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(rel, "/kind/bin/") || strings.HasPrefix(rel, "/usr/local/bin/") {
			mode = 0o755
		}
		return writeFile(root, rel, data, mode)
	})
}

// inRoot turns a node's absolute path into one relative to its root.
func inRoot(p string) string {
	p = strings.TrimLeft(path.Clean("/"+p), "/")
	if p == "" {
		return "."
	}
	return p
}

// writeFile writes data at the node's path p inside root, with mode,
// making its directories.
func writeFile(root *os.Root, p string, data []byte, mode os.FileMode) error {
	p = inRoot(p)
	if err := root.MkdirAll(path.Dir(p), 0o755); err != nil {
		return err
	}
	if err := root.WriteFile(p, data, mode); err != nil {
		return err
	}
	return root.Chmod(p, mode) // WriteFile keeps an existing file's mode
}

// copyFile copies the host's file src to the node's path dst in root.
func copyFile(src string, root *os.Root, dst string, mode os.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return writeFile(root, dst, data, mode)
}

// systemdSetup does what kind's Dockerfile does to systemd: only the
// node's units start, journald does not read the kernel's log, /sbin/init
// is systemd; then it enables and masks the units. Paths resolve inside
// root (Debian's /sbin and /lib are links into /usr).
func systemdSetup(root *os.Root) error {
	for _, g := range removedWants {
		matches, err := fs.Glob(root.FS(), g)
		if err != nil {
			return err
		}
		for _, m := range matches {
			if err := root.Remove(m); err != nil {
				return err
			}
		}
	}
	f, err := root.OpenFile("etc/systemd/journald.conf", os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString("ReadKMsg=no\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := replaceSymlink(root, "/usr/lib/systemd/systemd", "sbin/init"); err != nil {
		return err
	}
	for _, u := range enabledUnits {
		if err := replaceSymlink(root, "/etc/systemd/system/"+u, "etc/systemd/system/multi-user.target.wants/"+u); err != nil {
			return err
		}
	}
	for _, u := range maskedUnits {
		if err := replaceSymlink(root, "/dev/null", "etc/systemd/system/"+u); err != nil {
			return err
		}
	}
	return nil
}

// replaceSymlink makes link (a path in root) a symbolic link to target
// (a path as the node sees it).
func replaceSymlink(root *os.Root, target, link string) error {
	link = inRoot(link)
	if err := root.MkdirAll(path.Dir(link), 0o755); err != nil {
		return err
	}
	if err := root.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return root.Symlink(target, link)
}

package vmprovision

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// DefaultDebianKernelPackage is the metapackage of Debian's amd64 kernel.
const DefaultDebianKernelPackage = "linux-image-amd64"

// DefaultUbuntuKernelPackage is the metapackage of Ubuntu's kernel, which
// has no linux-image-amd64 (GitHub's hosted runners are Ubuntu).
const DefaultUbuntuKernelPackage = "linux-image-generic"

// DefaultKernelPackage is the kernel metapackage of the distribution
// /etc/os-release names (KernelPackageFor).
func DefaultKernelPackage() string {
	data, _ := os.ReadFile("/etc/os-release")
	return KernelPackageFor(string(data))
}

// KernelPackageFor picks the kernel metapackage for an os-release file's
// content: Ubuntu's (ID or ID_LIKE ubuntu) or else Debian's.
func KernelPackageFor(osRelease string) string {
	for _, line := range strings.Split(osRelease, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || (k != "ID" && k != "ID_LIKE") {
			continue
		}
		if slices.Contains(strings.Fields(strings.Trim(v, `"'`)), "ubuntu") {
			return DefaultUbuntuKernelPackage
		}
	}
	return DefaultDebianKernelPackage
}

// ParseAptDepends picks the kernel package a metapackage depends on from
// `apt-cache depends <meta>` output: the first "Depends: linux-image-..."
// line.
func ParseAptDepends(out, meta string) (string, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok || strings.TrimPrefix(k, "|") != "Depends" {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), "<>")
		if strings.HasPrefix(v, "linux-image-") && v != meta {
			return v, nil
		}
	}
	return "", fmt.Errorf("apt-cache depends %s: no linux-image-* dependency in %q", meta, out)
}

// ParseAptModuleDepends lists the linux-modules-* packages a kernel
// package depends on in `apt-cache depends <pkg>` output: Ubuntu ships
// the modules apart from the kernel image (linux-image-6.8.0-51-generic
// depends on linux-modules-6.8.0-51-generic); Debian has none.
func ParseAptModuleDepends(out string) []string {
	var mods []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok || strings.TrimPrefix(k, "|") != "Depends" {
			continue
		}
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, "linux-modules-") && !slices.Contains(mods, v) {
			mods = append(mods, v)
		}
	}
	return mods
}

// ErrNotPrepared is wrapped by the errors of the lookups that find a
// guest's parts in the cache without downloading or building them
// (CachedDebianKernel, FindImage, FindPVHKernel) when a part is not there.
var ErrNotPrepared = errors.New("not prepared")

// CachedDebianKernel returns the kernel FetchDebianKernel would download
// for meta (resolved with apt-cache, which reads the local package lists)
// when it is complete in cacheDir; it downloads nothing. A kernel not in
// the cache is an error wrapping ErrNotPrepared.
func CachedDebianKernel(ctx context.Context, cacheDir, meta string) (KernelTree, error) {
	pkg, err := kernelPackage(ctx, meta)
	if err != nil {
		return KernelTree{}, err
	}
	return cachedKernel(cacheDir, pkg)
}

// kernelPackage resolves a kernel metapackage (empty: this host's
// distribution's, DefaultKernelPackage) to the versioned package it
// depends on.
func kernelPackage(ctx context.Context, meta string) (string, error) {
	if meta == "" {
		meta = DefaultKernelPackage()
	}
	out, err := run(ctx, "", "apt-cache", "depends", meta)
	if err != nil {
		return "", err
	}
	return ParseAptDepends(out, meta)
}

// cachedKernel is the unpacked kernel package pkg in cacheDir, once its
// unpacking completed.
func cachedKernel(cacheDir, pkg string) (KernelTree, error) {
	dir := filepath.Join(cacheDir, pkg)
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return KernelTree{}, fmt.Errorf("kernel %s is not in %s: %w", pkg, cacheDir, ErrNotPrepared)
		}
		return KernelTree{}, fmt.Errorf("kernel %s: %w", pkg, err)
	}
	return FindKernelTree(filepath.Join(dir, "root"), "")
}

// FetchDebianKernel downloads the kernel package behind meta (Debian's
// linux-image-amd64, Ubuntu's linux-image-generic; empty: this host's
// distribution's, DefaultKernelPackage) and the linux-modules-* packages it
// depends on (Ubuntu) with apt-get into cacheDir/<package>, unpacks them
// with dpkg-deb and runs depmod -b, once: a complete tree is reused.
func FetchDebianKernel(ctx context.Context, cacheDir, meta string) (KernelTree, error) {
	pkg, err := kernelPackage(ctx, meta)
	if err != nil {
		return KernelTree{}, err
	}
	if t, err := cachedKernel(cacheDir, pkg); !errors.Is(err, ErrNotPrepared) {
		return t, err
	}
	dir := filepath.Join(cacheDir, pkg)
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return KernelTree{}, fmt.Errorf("kernel %s: %w", pkg, err)
	}
	deps, err := run(ctx, "", "apt-cache", "depends", pkg)
	if err != nil {
		return KernelTree{}, err
	}
	pkgs := append([]string{pkg}, ParseAptModuleDepends(deps)...)
	_ = os.RemoveAll(root)
	for _, p := range pkgs {
		deb, err := downloadDeb(ctx, dir, p)
		if err != nil {
			return KernelTree{}, fmt.Errorf("kernel %s: %w", pkg, err)
		}
		if _, err := run(ctx, "", "dpkg-deb", "-x", deb, root); err != nil {
			return KernelTree{}, err
		}
	}
	ents, err := os.ReadDir(filepath.Join(root, "lib/modules"))
	if err != nil || len(ents) != 1 {
		return KernelTree{}, fmt.Errorf("kernel %s: want one kernel in %s/lib/modules: %v", pkg, root, err)
	}
	if _, err := run(ctx, "", "depmod", "-b", root, ents[0].Name()); err != nil {
		return KernelTree{}, err
	}
	t, err := FindKernelTree(root, ents[0].Name())
	if err != nil {
		return KernelTree{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, ".complete"), []byte(t.Version+"\n"), 0o644); err != nil {
		return KernelTree{}, fmt.Errorf("kernel %s: %w", pkg, err)
	}
	return t, nil
}

// downloadDeb returns the package p's .deb in dir, downloading it first
// when dir has none. apt-get download writes the file under its final name
// as it goes, so it runs in a temporary directory under dir and the .deb
// is moved into dir only once complete: an interrupted download (a
// deadline, a killed run) leaves nothing that looks downloaded.
func downloadDeb(ctx context.Context, dir, p string) (string, error) {
	debs, _ := filepath.Glob(filepath.Join(dir, p+"_*.deb"))
	if len(debs) == 0 {
		tmp, err := os.MkdirTemp(dir, ".download-")
		if err != nil {
			return "", fmt.Errorf("download %s: %w", p, err)
		}
		defer os.RemoveAll(tmp)
		if _, err := run(ctx, tmp, "apt-get", "download", p); err != nil {
			return "", err
		}
		got, _ := filepath.Glob(filepath.Join(tmp, p+"_*.deb"))
		if len(got) != 1 {
			return "", fmt.Errorf("apt-get download %s: want one %s_*.deb, found %d", p, p, len(got))
		}
		dst := filepath.Join(dir, filepath.Base(got[0]))
		if err := os.Rename(got[0], dst); err != nil {
			return "", fmt.Errorf("download %s: %w", p, err)
		}
		debs = []string{dst}
	}
	if len(debs) != 1 {
		return "", fmt.Errorf("want one %s .deb in %s, found %d", p, dir, len(debs))
	}
	return debs[0], nil
}

func run(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

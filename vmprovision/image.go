package vmprovision

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/bootproof/bootproof/vmprovision/guest"
	"github.com/cavaliergopher/cpio"
)

// DefaultImageModules are the modules a guest image carries (with their
// dependencies): the virtio network stack, and the test modules: dummy
// (no dependencies), bonding (needs tls) and team_mode_roundrobin (needs
// team), so load order is exercised.
var DefaultImageModules = []string{"virtio_pci", "virtio_net", "dummy", "bonding", "team_mode_roundrobin"}

// KernelTree is an unpacked kernel: Root/boot/vmlinuz-<Version> and
// Root/lib/modules/<Version> with a modules.dep (depmod -b Root).
type KernelTree struct {
	Root    string
	Version string
}

// Vmlinuz is the kernel image.
func (t KernelTree) Vmlinuz() string {
	return filepath.Join(t.Root, "boot", "vmlinuz-"+t.Version)
}

// ModuleDir is lib/modules/<version>.
func (t KernelTree) ModuleDir() string {
	return filepath.Join(t.Root, "lib/modules", t.Version)
}

// FindKernelTree returns the kernel tree under root; version may be empty
// when root holds exactly one kernel.
func FindKernelTree(root, version string) (KernelTree, error) {
	if version == "" {
		ents, err := os.ReadDir(filepath.Join(root, "lib/modules"))
		if err != nil {
			return KernelTree{}, fmt.Errorf("kernel tree %s: %w", root, err)
		}
		var vs []string
		for _, e := range ents {
			if e.IsDir() {
				vs = append(vs, e.Name())
			}
		}
		if len(vs) != 1 {
			return KernelTree{}, fmt.Errorf("kernel tree %s: %d kernels in lib/modules (%s), name one", root, len(vs), strings.Join(vs, ", "))
		}
		version = vs[0]
	}
	t := KernelTree{Root: root, Version: version}
	for _, p := range []string{t.Vmlinuz(), filepath.Join(t.ModuleDir(), "modules.dep")} {
		if _, err := os.Stat(p); err != nil {
			return KernelTree{}, fmt.Errorf("kernel tree %s: %w", root, err)
		}
	}
	return t, nil
}

// ImageSpec describes the main guest initramfs.
type ImageSpec struct {
	Kernel KernelTree
	// Agent is the static bootproof-agent binary, installed as /init.
	Agent string
	// Modules are included with their dependencies; nil means
	// DefaultImageModules.
	Modules []string
	// Gzip compresses the image. Uncompressed boots faster under TCG
	// (no decompression in the guest) at the cost of disk space.
	Gzip bool
}

// ImageFile is one entry of an initramfs.
type ImageFile struct {
	// Path inside the image, absolute.
	Path string
	// Mode is the permission bits plus fs.ModeDir for directories.
	Mode fs.FileMode
	// Source is the host file with the content; empty when Data is set or
	// for a directory.
	Source string
	// Data is the content when there is no Source.
	Data []byte
}

// Manifest is what goes into an initramfs.
type Manifest struct {
	KernelVersion string
	// Modules are the included modules, in the order the agent may load
	// them (dependencies first within each requested module), deduplicated.
	Modules []string
	// ModulesDep is the image's modules.dep: the host's lines for the
	// included modules.
	ModulesDep string
	// Files are the entries, parents before children, sorted by path.
	Files []ImageFile
}

// PlanImage resolves which files and modules go into the main image.
func PlanImage(spec ImageSpec) (*Manifest, error) {
	mods := spec.Modules
	if mods == nil {
		mods = DefaultImageModules
	}
	depPath := filepath.Join(spec.Kernel.ModuleDir(), "modules.dep")
	f, err := os.Open(depPath)
	if err != nil {
		return nil, fmt.Errorf("plan image: %w", err)
	}
	dep, err := guest.ParseModulesDep(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("plan image: %s: %w", depPath, err)
	}
	// Resolve with the same code the guest uses, over the host tree.
	k := guest.TreeKernel(spec.Kernel.Root, spec.Kernel.Version, dep)
	var order []string
	for _, m := range mods {
		o, err := k.LoadOrder(m)
		if err != nil {
			return nil, fmt.Errorf("plan image: module %s for kernel %s: %w", m, spec.Kernel.Version, err)
		}
		for _, n := range o {
			if !slices.Contains(order, n) {
				order = append(order, n)
			}
		}
	}
	if _, err := os.Stat(spec.Agent); err != nil {
		return nil, fmt.Errorf("plan image: agent: %w", err)
	}
	m := &Manifest{KernelVersion: spec.Kernel.Version, Modules: order}
	moddir := path.Join("/lib/modules", spec.Kernel.Version)
	files := []ImageFile{
		{Path: "/init", Mode: 0o755, Source: spec.Agent},
	}
	for _, d := range []string{"/dev", "/proc", "/sys", "/tmp", "/etc/bootproof"} {
		files = append(files, ImageFile{Path: d, Mode: fs.ModeDir | 0o755})
	}
	var depLines []string
	for _, n := range order {
		e := dep[n]
		rel := filepath.ToSlash(e.Path)
		files = append(files, ImageFile{Path: path.Join(moddir, rel), Mode: 0o644, Source: filepath.Join(spec.Kernel.ModuleDir(), e.Path)})
		line := rel + ":"
		for _, d := range e.Deps {
			line += " " + filepath.ToSlash(dep[d].Path)
		}
		depLines = append(depLines, line)
	}
	sort.Strings(depLines)
	m.ModulesDep = strings.Join(depLines, "\n") + "\n"
	files = append(files, ImageFile{Path: path.Join(moddir, "modules.dep"), Mode: 0o644, Data: []byte(m.ModulesDep)})
	if b, err := os.ReadFile(filepath.Join(spec.Kernel.ModuleDir(), "modules.builtin")); err == nil {
		files = append(files, ImageFile{Path: path.Join(moddir, "modules.builtin"), Mode: 0o644, Data: b})
	}
	m.Files = withParents(files)
	return m, nil
}

// withParents adds the missing parent directories and sorts by path.
func withParents(files []ImageFile) []ImageFile {
	have := map[string]bool{}
	for _, f := range files {
		have[f.Path] = true
	}
	out := slices.Clone(files)
	for _, f := range files {
		for d := path.Dir(f.Path); d != "/" && !have[d]; d = path.Dir(d) {
			have[d] = true
			out = append(out, ImageFile{Path: d, Mode: fs.ModeDir | 0o755})
		}
	}
	slices.SortFunc(out, func(a, b ImageFile) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// String renders the manifest for review and golden tests: one line per
// entry, then modules.dep. Sources are shown relative to their kernel or
// agent so the text does not depend on where the tree is.
func (m *Manifest) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kernel %s\nmodules %s\n", m.KernelVersion, strings.Join(m.Modules, " "))
	for _, f := range m.Files {
		kind := "file"
		if f.Mode.IsDir() {
			kind = "dir "
		}
		src := ""
		switch {
		case f.Source != "":
			src = " <- " + filepath.Base(f.Source)
		case f.Data != nil:
			src = fmt.Sprintf(" (%d bytes)", len(f.Data))
		}
		fmt.Fprintf(&b, "%s %04o %s%s\n", kind, f.Mode.Perm(), f.Path, src)
	}
	b.WriteString("modules.dep:\n" + m.ModulesDep)
	return b.String()
}

// WriteCPIO writes the manifest as a newc cpio archive (uncompressed).
func (m *Manifest) WriteCPIO(w io.Writer) error {
	return writeCPIO(w, m.Files)
}

func writeCPIO(w io.Writer, files []ImageFile) error {
	cw := cpio.NewWriter(w)
	for i, f := range files {
		name := strings.TrimPrefix(f.Path, "/")
		h := &cpio.Header{Name: name, Mode: cpio.FileMode(f.Mode.Perm()), Inode: int64(i + 1), Links: 1}
		if f.Mode.IsDir() {
			h.Mode |= cpio.TypeDir
			h.Links = 2
			if err := cw.WriteHeader(h); err != nil {
				return fmt.Errorf("cpio %s: %w", f.Path, err)
			}
			continue
		}
		h.Mode |= cpio.TypeReg
		if err := writeCPIOFile(cw, h, f); err != nil {
			return fmt.Errorf("cpio %s: %w", f.Path, err)
		}
	}
	if err := cw.Close(); err != nil {
		return fmt.Errorf("cpio trailer: %w", err)
	}
	return nil
}

func writeCPIOFile(cw *cpio.Writer, h *cpio.Header, f ImageFile) error {
	var r io.Reader = bytes.NewReader(f.Data)
	h.Size = int64(len(f.Data))
	if f.Source != "" {
		src, err := os.Open(f.Source)
		if err != nil {
			return err
		}
		defer src.Close()
		st, err := src.Stat()
		if err != nil {
			return err
		}
		h.Size, r = st.Size(), src
	}
	if err := cw.WriteHeader(h); err != nil {
		return err
	}
	n, err := io.Copy(cw, r)
	if err != nil {
		return err
	}
	if n != h.Size {
		return fmt.Errorf("%s changed while copying: %d bytes, want %d", f.Source, n, h.Size)
	}
	return nil
}

// Hash is the content hash of the image: every path, mode and content.
func (m *Manifest) Hash() (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "bootproof-initramfs v1\n")
	for _, f := range m.Files {
		fmt.Fprintf(h, "%s %o\n", f.Path, uint32(f.Mode))
		switch {
		case f.Source != "":
			src, err := os.Open(f.Source)
			if err != nil {
				return "", fmt.Errorf("hash image: %w", err)
			}
			_, err = io.Copy(h, src)
			src.Close()
			if err != nil {
				return "", fmt.Errorf("hash image: %s: %w", f.Source, err)
			}
		default:
			h.Write(f.Data)
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Image is a built main initramfs.
type Image struct {
	Kernel   KernelTree
	Path     string // newc cpio, gzip-compressed with ImageSpec.Gzip
	Hash     string
	Manifest *Manifest
	// Cached is true when the image was already in the cache.
	Cached bool
}

// FindImage returns the image spec describes when cacheDir holds it
// already (Cached true); it writes nothing. An image not in the cache is
// an error wrapping ErrNotPrepared.
func FindImage(spec ImageSpec, cacheDir string) (*Image, error) {
	img, err := planImageFile(spec, cacheDir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(img.Path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("image %s for kernel %s and agent %s is not in %s: %w", filepath.Base(img.Path), spec.Kernel.Version, spec.Agent, cacheDir, ErrNotPrepared)
		}
		return nil, fmt.Errorf("find image: %w", err)
	}
	img.Cached = true
	return img, nil
}

// planImageFile plans the image and names its file in cacheDir:
// initramfs-<hash>.cpio[.gz].
func planImageFile(spec ImageSpec, cacheDir string) (*Image, error) {
	m, err := PlanImage(spec)
	if err != nil {
		return nil, err
	}
	sum, err := m.Hash()
	if err != nil {
		return nil, err
	}
	ext := ".cpio"
	if spec.Gzip {
		ext += ".gz"
	}
	return &Image{Kernel: spec.Kernel, Hash: sum, Manifest: m,
		Path: filepath.Join(cacheDir, "initramfs-"+sum[:16]+ext)}, nil
}

// BuildImage plans the image and writes it to
// cacheDir/initramfs-<hash>.cpio[.gz] unless that file exists already.
func BuildImage(spec ImageSpec, cacheDir string) (*Image, error) {
	img, err := planImageFile(spec, cacheDir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(img.Path); err == nil {
		img.Cached = true
		return img, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("build image: %w", err)
	}
	tmp, err := os.CreateTemp(cacheDir, ".initramfs-*")
	if err != nil {
		return nil, fmt.Errorf("build image: %w", err)
	}
	defer os.Remove(tmp.Name())
	if spec.Gzip {
		zw, _ := gzip.NewWriterLevel(tmp, gzip.BestSpeed)
		err = errors.Join(img.Manifest.WriteCPIO(zw), zw.Close(), tmp.Close())
	} else {
		err = errors.Join(img.Manifest.WriteCPIO(tmp), tmp.Close())
	}
	if err != nil {
		return nil, fmt.Errorf("build image %s: %w", img.Path, err)
	}
	if err := os.Rename(tmp.Name(), img.Path); err != nil {
		return nil, fmt.Errorf("build image: %w", err)
	}
	return img, nil
}

// NodeFiles are the per-node entries: the agent configuration.
func NodeFiles(cfg guest.AgentConfig) ([]ImageFile, error) {
	if err := cfg.Default(); err != nil {
		return nil, err
	}
	b, err := cfg.Encode()
	if err != nil {
		return nil, err
	}
	return withParents([]ImageFile{{Path: guest.AgentConfigPath, Mode: 0o600, Data: b}}), nil
}

// WriteNodeInitramfs writes the per-node initramfs (uncompressed cpio with
// the agent configuration), to be appended to the main image.
func WriteNodeInitramfs(w io.Writer, cfg guest.AgentConfig) error {
	files, err := NodeFiles(cfg)
	if err != nil {
		return err
	}
	if err := writeCPIO(w, files); err != nil {
		return fmt.Errorf("node %s initramfs: %w", cfg.NodeName, err)
	}
	return nil
}

// WriteBootInitramfs writes the initramfs a node boots with: the main
// image followed by the node's archive (the kernel unpacks concatenated
// archives in order).
func WriteBootInitramfs(dst string, img *Image, cfg guest.AgentConfig) error {
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("node %s initramfs: %w", cfg.NodeName, err)
	}
	in, err := os.Open(img.Path)
	if err != nil {
		out.Close()
		return fmt.Errorf("node %s initramfs: %w", cfg.NodeName, err)
	}
	defer in.Close()
	n, err := io.Copy(out, in)
	if err == nil {
		// The kernel looks for the next archive's magic at a 4-byte
		// boundary and skips zero padding; the gzip stream before it has
		// any length.
		_, err = out.Write(make([]byte, (4-n%4)%4))
	}
	if err == nil {
		err = WriteNodeInitramfs(out, cfg)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("node %s initramfs %s: %w", cfg.NodeName, dst, err)
	}
	return nil
}

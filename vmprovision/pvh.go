package vmprovision

import (
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// xenElfnotePhys32Entry is the ELF note (owner "Xen") that gives a
// kernel's PVH entry point: QEMU boots such an ELF kernel directly.
const xenElfnotePhys32Entry = 18

// PVHKernel is the kernel image to boot the tree's kernel fast under
// QEMU: the uncompressed ELF kernel (vmlinux) inside its bzImage, which
// QEMU starts at its PVH entry point. The guest runs the same kernel;
// only the decompression the bzImage would do in the guest, slow under
// TCG, is done once on the host. The file is written next to the
// bzImage as boot/vmlinux-<version> and reused. A kernel without a PVH
// entry (CONFIG_PVH), or compressed with a method other than xz or gzip,
// is an error: boot the bzImage then.
func PVHKernel(ctx context.Context, t KernelTree) (string, error) {
	dst := pvhKernelPath(t)
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	bz, err := os.ReadFile(t.Vmlinuz())
	if err != nil {
		return "", fmt.Errorf("pvh kernel: %w", err)
	}
	payload, err := BzImagePayload(bz)
	if err != nil {
		return "", fmt.Errorf("pvh kernel %s: %w", t.Vmlinuz(), err)
	}
	vmlinux, err := decompressPayload(ctx, payload)
	if err != nil {
		return "", fmt.Errorf("pvh kernel %s: %w", t.Vmlinuz(), err)
	}
	if err := CheckPVHEntry(vmlinux); err != nil {
		return "", fmt.Errorf("pvh kernel %s: %w", t.Vmlinuz(), err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".vmlinux-*")
	if err != nil {
		return "", fmt.Errorf("pvh kernel: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(vmlinux)
	if err = errors.Join(err, tmp.Chmod(0o644), tmp.Close()); err != nil {
		return "", fmt.Errorf("pvh kernel: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", fmt.Errorf("pvh kernel: %w", err)
	}
	return dst, nil
}

// FindPVHKernel returns the kernel PVHKernel wrote for t when it is there;
// it writes nothing. One not written yet is an error wrapping
// ErrNotPrepared.
func FindPVHKernel(t KernelTree) (string, error) {
	dst := pvhKernelPath(t)
	if _, err := os.Stat(dst); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("pvh kernel %s is not written yet: %w", dst, ErrNotPrepared)
		}
		return "", fmt.Errorf("pvh kernel: %w", err)
	}
	return dst, nil
}

// pvhKernelPath is where PVHKernel writes t's uncompressed kernel.
func pvhKernelPath(t KernelTree) string {
	return filepath.Join(t.Root, "boot", "vmlinux-"+t.Version)
}

// BzImagePayload returns the compressed kernel inside a bzImage, as its
// boot protocol header (2.08 or later) locates it.
func BzImagePayload(bz []byte) ([]byte, error) {
	if len(bz) < 0x250 || string(bz[0x202:0x206]) != "HdrS" {
		return nil, errors.New("not a bzImage (no HdrS boot header)")
	}
	if v := binary.LittleEndian.Uint16(bz[0x206:]); v < 0x0208 {
		return nil, fmt.Errorf("boot protocol %#x has no payload fields (want 2.08 or later)", v)
	}
	setup := int(bz[0x1f1])
	if setup == 0 {
		setup = 4
	}
	start := (setup+1)*512 + int(binary.LittleEndian.Uint32(bz[0x248:]))
	n := int(binary.LittleEndian.Uint32(bz[0x24c:]))
	if n <= 0 || start+n > len(bz) {
		return nil, fmt.Errorf("payload at %d+%d is outside the %d-byte image", start, n, len(bz))
	}
	return bz[start : start+n], nil
}

// decompressPayload decompresses a gzip (in Go) or xz (with the host's
// xz) kernel payload; the kernel build appends 4 bytes (the size) after
// the stream, which both ignore.
func decompressPayload(ctx context.Context, p []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(p, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(bytes.NewReader(p))
		if err != nil {
			return nil, fmt.Errorf("gzip payload: %w", err)
		}
		zr.Multistream(false)
		out, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("gzip payload: %w", err)
		}
		return out, nil
	case bytes.HasPrefix(p, []byte("\xfd7zXZ\x00")):
		cmd := exec.CommandContext(ctx, "xz", "--decompress", "--stdout", "--single-stream")
		cmd.Stdin = bytes.NewReader(p)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("xz payload: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
		}
		return out, nil
	}
	return nil, fmt.Errorf("payload compressed with an unsupported method (magic % x): only gzip and xz", p[:min(len(p), 6)])
}

// CheckPVHEntry checks that b is an x86-64 ELF kernel with a PVH entry
// point note.
func CheckPVHEntry(b []byte) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("kernel ELF: %w", err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("kernel ELF for %s, want x86-64", f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		data, err := io.ReadAll(p.Open())
		if err != nil {
			return fmt.Errorf("kernel ELF notes: %w", err)
		}
		if hasNote(data, f.ByteOrder, "Xen", xenElfnotePhys32Entry) {
			return nil
		}
	}
	return errors.New("kernel ELF has no PVH entry note (CONFIG_PVH)")
}

// hasNote reports whether the ELF note segment data holds a note of owner
// name and type typ.
func hasNote(data []byte, bo binary.ByteOrder, name string, typ uint32) bool {
	align4 := func(n int) int { return (n + 3) &^ 3 }
	for len(data) >= 12 {
		nsz, dsz, t := int(bo.Uint32(data)), int(bo.Uint32(data[4:])), bo.Uint32(data[8:])
		data = data[12:]
		if nsz < 0 || dsz < 0 || align4(nsz)+align4(dsz) > len(data) {
			return false
		}
		if t == typ && string(bytes.TrimRight(data[:nsz], "\x00")) == name {
			return true
		}
		data = data[align4(nsz)+align4(dsz):]
	}
	return false
}

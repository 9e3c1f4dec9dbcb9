package kindimage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// rootfsRecipe versions what Debootstrap does besides debootstrap itself;
// a change to it makes every cached root filesystem stale. "2": the
// Release file's signature is checked against a keyring (trees of recipe
// 1 were installed unverified and are rebuilt).
const rootfsRecipe = "2"

// trimmed are removed from every root filesystem: documentation, package
// caches and lists, which no node or image reads.
var trimmed = []string{"usr/share/doc", "usr/share/man", "usr/share/info", "var/cache/apt", "var/lib/apt/lists", "var/cache/debconf/templates.dat-old", "var/log/bootstrap.log"}

// Rootfs is one Debian root filesystem Debootstrap installs.
type Rootfs struct {
	// Name tells root filesystems apart in the work directory ("node").
	Name string
	// Suite and Mirror are the Debian release and archive.
	Suite, Mirror string
	// Keyring holds the archive keys the Release file's signature must
	// verify with (debootstrap --keyring --force-check-gpg).
	Keyring string
	// Packages are installed on top of debootstrap's minbase variant.
	Packages []string
}

// Key names a cached root filesystem: it changes with the suite, the
// mirror, the packages, the keyring's content and the recipe, so a tree
// verified with other keys, or not at all, is never reused.
func (r Rootfs) Key() (string, error) {
	keys, err := os.ReadFile(r.Keyring)
	if err != nil {
		return "", fmt.Errorf("the Debian archive keyring %s: %w (install debian-archive-keyring: 'make deps-kind' does; or give --keyring)", r.Keyring, err)
	}
	kh := sha256.Sum256(keys)
	h := sha256.Sum256([]byte(strings.Join([]string{rootfsRecipe, r.Suite, r.Mirror, strings.Join(r.Packages, ","), hex.EncodeToString(kh[:])}, "\n")))
	return hex.EncodeToString(h[:8]), nil
}

// Debootstrap installs a minimal Debian with fs.Packages into a directory
// under workDir, or returns the one a previous build left (the directory
// is renamed into place only once complete). The Release file's
// signature must verify with fs.Keyring; debootstrap's warnings go to
// progress. Its downloads are kept in workDir/debs for the next root
// filesystem. workDir must be one CheckWorkDir accepted.
func Debootstrap(ctx context.Context, r Runner, workDir string, fs Rootfs, progress io.Writer) (dir string, cached bool, err error) {
	key, err := fs.Key()
	if err != nil {
		return "", false, err
	}
	rootfsDir, err := privateSubdir(workDir, "rootfs")
	if err != nil {
		return "", false, err
	}
	debs, err := privateSubdir(workDir, "debs")
	if err != nil {
		return "", false, err
	}
	dir = filepath.Join(rootfsDir, fs.Name+"-"+key)
	if fi, err := os.Lstat(filepath.Join(dir, "etc", "os-release")); err == nil && !fi.IsDir() {
		return dir, true, nil
	}
	tmp := dir + ".partial"
	if err := removeTree(tmp); err != nil {
		return "", false, err
	}
	args := []string{"--variant=minbase", "--include=" + strings.Join(fs.Packages, ","), "--cache-dir=" + debs,
		"--keyring=" + fs.Keyring, "--force-check-gpg", fs.Suite, tmp, fs.Mirror}
	out, err := r.Output(ctx, "debootstrap", args...)
	for _, line := range debootstrapNotes(out) {
		fmt.Fprintf(progress, "kind-image: debootstrap %s: %s\n", fs.Name, line)
	}
	if err != nil {
		_ = removeTree(tmp)
		return "", false, fmt.Errorf("debootstrap %s (%s from %s, keyring %s): %w\n%s", fs.Name, fs.Suite, fs.Mirror, fs.Keyring, err, lastLines(out, 20))
	}
	if err := unmountUnder(tmp); err != nil {
		return "", false, err
	}
	if err := trim(tmp); err != nil {
		return "", false, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", false, err
	}
	return dir, false, nil
}

// debootstrapNotes are the lines of debootstrap's output a user must see:
// its warnings and errors (W:, E:) and its signature checks.
func debootstrapNotes(out []byte) []string {
	var notes []string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "W: ") || strings.HasPrefix(line, "E: ") || strings.Contains(line, "Release signature") {
			notes = append(notes, line)
		}
	}
	return notes
}

// trim removes the trimmed paths inside dir, never following a link out
// of it.
func trim(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, p := range trimmed {
		if err := root.RemoveAll(p); err != nil {
			return fmt.Errorf("trim %s: %w", filepath.Join(dir, p), err)
		}
	}
	return nil
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// removeTree removes dir after unmounting what an interrupted debootstrap
// left mounted in it (its /proc and /sys), so the removal never reaches
// into a mounted file system.
func removeTree(dir string) error {
	if err := unmountUnder(dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// unmountUnder detaches every mount at or below dir, deepest first.
func unmountUnder(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		p := unescapeMountPath(f[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmount %s: %w", p, err)
		}
	}
	return nil
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

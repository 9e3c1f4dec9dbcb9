package kindimage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// rootfsRecipe versions what Debootstrap does besides debootstrap itself;
// a change to it makes every cached root filesystem stale.
const rootfsRecipe = "1"

// trimmed are removed from every root filesystem: documentation, package
// caches and lists, which no node or image reads.
var trimmed = []string{"usr/share/doc", "usr/share/man", "usr/share/info", "var/cache/apt", "var/lib/apt/lists", "var/cache/debconf/templates.dat-old", "var/log/bootstrap.log"}

// RootfsKey names a cached root filesystem: it changes with the suite,
// the mirror, the packages and the recipe.
func RootfsKey(suite, mirror string, packages []string) string {
	h := sha256.Sum256([]byte(strings.Join([]string{rootfsRecipe, suite, mirror, strings.Join(packages, ",")}, "\n")))
	return hex.EncodeToString(h[:8])
}

// Debootstrap installs a minimal Debian with packages into a directory
// under workDir, or returns the one a previous build left (the directory
// is renamed into place only once complete). debootstrap's downloads are
// kept in workDir/debs for the next root filesystem.
func Debootstrap(ctx context.Context, r Runner, workDir, name, suite, mirror string, packages []string) (dir string, cached bool, err error) {
	workDir, err = filepath.Abs(workDir) // debootstrap changes directory
	if err != nil {
		return "", false, err
	}
	dir = filepath.Join(workDir, "rootfs", name+"-"+RootfsKey(suite, mirror, packages))
	if _, err := os.Stat(filepath.Join(dir, "etc", "os-release")); err == nil {
		return dir, true, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", false, err
	}
	debs := filepath.Join(workDir, "debs")
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return "", false, err
	}
	tmp := dir + ".partial"
	if err := removeTree(tmp); err != nil {
		return "", false, err
	}
	args := []string{"--variant=minbase", "--include=" + strings.Join(packages, ","), "--cache-dir=" + debs, suite, tmp, mirror}
	if out, err := r.Output(ctx, "debootstrap", args...); err != nil {
		_ = removeTree(tmp)
		return "", false, fmt.Errorf("debootstrap %s (%s from %s): %w\n%s", name, suite, mirror, err, lastLines(out, 20))
	}
	if err := unmountUnder(tmp); err != nil {
		return "", false, err
	}
	for _, p := range trimmed {
		if err := os.RemoveAll(filepath.Join(tmp, p)); err != nil {
			return "", false, err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", false, err
	}
	return dir, false, nil
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

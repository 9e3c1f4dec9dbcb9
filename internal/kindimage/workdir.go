package kindimage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A build runs as root and reuses what its work directory holds (root
// filesystems, image archives, downloaded packages). So it trusts a work
// directory only if no one but root could have put anything there: the
// directory and each of its ancestors must be owned by root and writable
// by no one else (an ancestor may be world-writable with the sticky bit,
// as /tmp is: no one else can then rename what root made in it).

// UnsafeDirError says why a build does not trust a directory.
type UnsafeDirError struct {
	Path   string
	Reason string
}

func (e *UnsafeDirError) Error() string {
	return fmt.Sprintf("kind image work directory: %s %s: a root build reuses only what root alone could have written; "+
		"give a directory owned by root and writable by no one else (--work-dir, e.g. /var/cache/bootproof/kind-image)", e.Path, e.Reason)
}

// CheckWorkDir makes dir (mode 0755) if it is missing and checks that it
// and its ancestors are safe for a root build to trust; it returns dir
// made absolute.
func CheckWorkDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", err
	}
	if err := checkPrivateDir(abs); err != nil {
		return "", err
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		if err := checkAncestor(p); err != nil {
			return "", err
		}
		if p == filepath.Dir(p) {
			return abs, nil
		}
	}
}

// privateSubdir makes (or checks) dir/name, owned by root and writable by
// no one else.
func privateSubdir(dir, name string) (string, error) {
	p := filepath.Join(dir, name)
	if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	return p, checkPrivateDir(p)
}

// checkPrivateDir: a directory, not a link, owned by this (root) user,
// writable by no one else.
func checkPrivateDir(p string) error {
	st, err := lstat(p)
	if err != nil {
		return err
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFDIR:
		return &UnsafeDirError{p, "is not a directory (a link or a file)"}
	case int(st.Uid) != os.Geteuid():
		return &UnsafeDirError{p, fmt.Sprintf("is owned by uid %d, not %d", st.Uid, os.Geteuid())}
	case st.Mode&0o022 != 0:
		return &UnsafeDirError{p, fmt.Sprintf("is writable by group or others (mode %04o)", st.Mode&0o7777)}
	}
	return nil
}

// checkAncestor: owned by root or this user; writable by others only
// with the sticky bit. A link among the ancestors (Debian's /var/run) is
// judged by its target.
func checkAncestor(p string) error {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		return fmt.Errorf("stat %s: %w", p, err)
	}
	switch {
	case st.Uid != 0 && int(st.Uid) != os.Geteuid():
		return &UnsafeDirError{p, fmt.Sprintf("(an ancestor) is owned by uid %d", st.Uid)}
	case st.Mode&0o022 != 0 && st.Mode&syscall.S_ISVTX == 0:
		return &UnsafeDirError{p, fmt.Sprintf("(an ancestor) is writable by group or others without the sticky bit (mode %04o)", st.Mode&0o7777)}
	}
	return nil
}

func lstat(p string) (syscall.Stat_t, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return st, fmt.Errorf("lstat %s: %w", p, err)
	}
	return st, nil
}

// lockWorkDir takes dir's build lock (an exclusive flock on dir/.lock),
// waiting for another build to finish; say is told once when it waits.
// The returned function releases it.
func lockWorkDir(ctx context.Context, dir string, say func()) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("kind image work directory lock: %w", err)
	}
	told := false
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if !told {
			say()
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for %s: %w", f.Name(), context.Cause(ctx))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

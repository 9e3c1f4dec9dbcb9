package ownership

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// TempDir creates a private (0700) temporary directory named
// bootproof-<kind>-<pid>-<random> under os.TempDir(). kind is lower-case
// words joined by '-' (controlplane, subject, kind, nodes).
func TempDir(kind string) (string, error) {
	d, err := os.MkdirTemp("", fmt.Sprintf("bootproof-%s-%d-", kind, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("create %s directory: %w", kind, err)
	}
	return d, nil
}

// TempDirGlob matches the directories TempDir(kind) makes, of any
// process, under os.TempDir().
func TempDirGlob(kind string) string {
	return filepath.Join(os.TempDir(), "bootproof-"+kind+"-*")
}

// tempDirName matches the directories TempDir makes: kind, pid.
var tempDirName = regexp.MustCompile(`^bootproof-([a-z]+(?:-[a-z]+)*)-([0-9]+)-[0-9]+$`)

// Owner identifies a process across pid reuse: its pid and its start
// time in clock ticks since boot (/proc/<pid>/stat field 22).
type Owner struct {
	PID   int
	Start uint64
}

// Self is this process as an Owner.
func Self() Owner {
	start, _ := processStart(os.Getpid())
	return Owner{PID: os.Getpid(), Start: start}
}

// String is "pid/start", the form ParseOwner reads.
func (o Owner) String() string { return strconv.Itoa(o.PID) + "/" + strconv.FormatUint(o.Start, 10) }

// ParseOwner reads Owner.String's form.
func ParseOwner(s string) (Owner, error) {
	pid, start, ok := strings.Cut(s, "/")
	p, err1 := strconv.Atoi(pid)
	st, err2 := strconv.ParseUint(start, 10, 64)
	if !ok || err1 != nil || err2 != nil || p <= 0 {
		return Owner{}, fmt.Errorf("owner %q: want <pid>/<start ticks>", s)
	}
	return Owner{PID: p, Start: st}, nil
}

// Alive reports whether the owner process still runs: its pid exists
// and started at the recorded time.
func (o Owner) Alive() bool {
	start, err := processStart(o.PID)
	return err == nil && start == o.Start
}

// processStart reads a process's start time in clock ticks since boot.
func processStart(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	return strconv.ParseUint(f[19], 10, 64) // field 22
}

// dirOwnerAlive: the process with pid still runs and started before the
// directory's last change. A process that started later only reuses the
// pid: the owner held it from the directory's creation until it died,
// and nothing but the owner changes the directory.
func dirOwnerAlive(pid int, changed time.Time) bool {
	start, err := processStart(pid)
	if err != nil {
		return false
	}
	boot, err := bootTime()
	if err != nil {
		return true // cannot tell: keep it
	}
	const userHZ = 100 // /proc reports times in USER_HZ, 100 on Linux
	started := boot.Add(time.Duration(start) * time.Second / userHZ)
	return !started.After(changed.Add(time.Second))
}

// bootTime reads btime from /proc/stat.
func bootTime() (time.Time, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("/proc/stat btime: %w", err)
			}
			return time.Unix(s, 0), nil
		}
	}
	return time.Time{}, errors.New("/proc/stat: no btime")
}

// SweepTempDirs removes the directories TempDir made in dir (empty:
// os.TempDir()) whose owner process is gone, and returns their paths;
// with dryRun it only returns them.
func SweepTempDirs(dir string, dryRun bool) ([]string, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", dir, err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		m := tempDirName.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		pid, _ := strconv.Atoi(m[2])
		if pid <= 1 {
			continue // not a pid TempDir writes (an older form named by uid)
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if pid == os.Getpid() || dirOwnerAlive(pid, info.ModTime()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if dryRun {
			removed = append(removed, p)
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("remove %s of dead process %d: %w", p, pid, err))
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}

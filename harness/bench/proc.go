package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// userHZ is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const userHZ = 100

// CPUSeconds returns the CPU time (utime+stime) process pid has used so far.
func CPUSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name, want at least 13", pid, len(f))
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return (ut + st) / userHZ, nil
}

// Memory is a process's resident memory in MiB.
type Memory struct {
	// RSS is VmRSS: resident now.
	RSS float64
	// Peak is VmHWM: the highest RSS so far.
	Peak float64
}

// MemoryOf reads VmRSS and VmHWM of process pid from /proc/<pid>/status.
func MemoryOf(pid int) (Memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	found := 0
	for _, l := range strings.Split(string(data), "\n") {
		var dst *float64
		switch {
		case strings.HasPrefix(l, "VmRSS:"):
			dst = &m.RSS
		case strings.HasPrefix(l, "VmHWM:"):
			dst = &m.Peak
		default:
			continue
		}
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return Memory{}, fmt.Errorf("/proc/%d/status: %q: %w", pid, l, err)
		}
		*dst = kb / 1024
		found++
	}
	if found != 2 {
		return Memory{}, fmt.Errorf("/proc/%d/status: no VmRSS/VmHWM (a kernel thread or a zombie?)", pid)
	}
	return m, nil
}

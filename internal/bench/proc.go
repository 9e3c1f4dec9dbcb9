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

// LoadAverage returns the 1, 5 and 15 minute load averages of /proc/loadavg.
func LoadAverage() ([3]float64, error) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return [3]float64{}, err
	}
	return ParseLoadAverage(string(data))
}

// ParseLoadAverage reads the first three fields of /proc/loadavg.
func ParseLoadAverage(s string) ([3]float64, error) {
	var l [3]float64
	f := strings.Fields(s)
	if len(f) < 3 {
		return l, fmt.Errorf("/proc/loadavg %q: want 3 load averages", s)
	}
	for i := range l {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return l, fmt.Errorf("/proc/loadavg %q: %w", s, err)
		}
		l[i] = v
	}
	return l, nil
}

// MachineCPU returns the CPU time, in seconds summed over all CPUs, the
// machine has spent busy (not idle, not waiting for I/O) and in total
// since boot, from the first line of /proc/stat.
func MachineCPU() (busy, total float64, err error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return ParseMachineCPU(line)
}

// ParseMachineCPU reads the "cpu" line of /proc/stat (user nice system
// idle iowait irq softirq steal ..., in USER_HZ); guest time is already in
// user and nice, so only the first 8 fields count.
func ParseMachineCPU(line string) (busy, total float64, err error) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat %q: want the cpu line", line)
	}
	for i, s := range f[1:min(len(f), 9)] {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat %q: %w", line, err)
		}
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy / userHZ, total / userHZ, nil
}

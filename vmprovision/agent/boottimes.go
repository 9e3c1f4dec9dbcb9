//go:build linux

package agent

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bootproof/bootproof/vmprovision/agentapi"
)

// BootTimer is the optional capability of a Machine to report the boot's
// milestones with GET /state (agentapi.BootTimes).
type BootTimer interface {
	BootTimes() *agentapi.BootTimes
}

// kmsgRunInit is the kernel's message right before it executes /init.
const kmsgRunInit = "Run /init as init process"

// KmsgRecord is one record of /dev/kmsg: its timestamp on the kernel's
// printk clock and its message.
type KmsgRecord struct {
	At  time.Duration
	Msg string
}

// ParseKmsg parses one /dev/kmsg record, "<prio>,<seq>,<usec>,<flags>[,...];<message>"
// (continuation lines, which start with a space, are not records).
func ParseKmsg(line string) (KmsgRecord, error) {
	head, msg, ok := strings.Cut(line, ";")
	if !ok {
		return KmsgRecord{}, fmt.Errorf("kmsg record %q: no ';'", line)
	}
	f := strings.Split(head, ",")
	if len(f) < 4 {
		return KmsgRecord{}, fmt.Errorf("kmsg record %q: want prio,seq,usec,flags", line)
	}
	us, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || us < 0 {
		return KmsgRecord{}, fmt.Errorf("kmsg record %q: timestamp %q is not microseconds", line, f[2])
	}
	return KmsgRecord{At: time.Duration(us) * time.Microsecond, Msg: strings.TrimRight(msg, "\n")}, nil
}

// InitOnBootClock finds when the kernel ran /init in records and places
// it on the boot clock: the printk clock and CLOCK_BOOTTIME differ by an
// offset (the kernel adjusts sched_clock when it marks it stable), which
// the marker gives: the record with message marker was written when the
// boot clock read markerAt.
func InitOnBootClock(records []KmsgRecord, marker string, markerAt time.Duration) (time.Duration, error) {
	var initAt, markAt time.Duration
	var haveInit, haveMark bool
	for _, r := range records {
		switch {
		case !haveInit && r.Msg == kmsgRunInit:
			initAt, haveInit = r.At, true
		case r.Msg == marker:
			markAt, haveMark = r.At, true
		}
	}
	switch {
	case !haveInit:
		return 0, fmt.Errorf("kernel log: no %q", kmsgRunInit)
	case !haveMark:
		return 0, fmt.Errorf("kernel log: no marker %q", marker)
	}
	at := initAt - markAt + markerAt
	if at <= 0 || at > markerAt {
		return 0, fmt.Errorf("kernel log: /init at %s on the boot clock (printk %s, marker %s at %s): not within this boot", at, initAt, markAt, markerAt)
	}
	return at, nil
}

// bootClock is CLOCK_BOOTTIME: the time since the kernel started its
// clock, suspend included.
func bootClock() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// readKmsgInit writes a marker to the kernel log, reads the log back and
// returns when /init ran on the boot clock. It uses the raw file
// descriptor: the end of the log is EAGAIN, which os.File's poller would
// wait out.
func readKmsgInit(path string) (time.Duration, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("kernel log %s: %w", path, err)
	}
	defer unix.Close(fd)
	marker := fmt.Sprintf("bootproof-agent: boot clock marker %d", os.Getpid())
	before := bootClock()
	if _, err := unix.Write(fd, []byte(marker+"\n")); err != nil {
		return 0, fmt.Errorf("kernel log: write marker: %w", err)
	}
	markerAt := (before + bootClock()) / 2
	// Each read returns one record; the end is EAGAIN. A record lost to
	// the ring buffer's overflow is EPIPE: read on.
	var records []KmsgRecord
	buf := make([]byte, 8192)
	for range 100000 {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EPIPE) || errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) || (err == nil && n == 0) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("kernel log: %w", err)
		}
		if rec, err := ParseKmsg(string(buf[:n])); err == nil {
			records = append(records, rec)
		}
	}
	return InitOnBootClock(records, marker, markerAt)
}

// bootMilestones records the agent's milestones in this boot.
type bootMilestones struct {
	mu           sync.Mutex
	agentMain    time.Duration
	kubeletStart time.Duration
	registered   time.Duration
	// init reads the kernel log once, on the first request.
	init func() time.Duration
}

// newBootMilestones starts the record at the agent's start; kmsg is the
// kernel log to find /init in (empty: none, Init stays zero).
func newBootMilestones(kmsg string, log func(error)) *bootMilestones {
	if kmsg == "" {
		return &bootMilestones{agentMain: bootClock(), init: func() time.Duration { return 0 }}
	}
	return &bootMilestones{agentMain: bootClock(), init: sync.OnceValue(func() time.Duration {
		at, err := readKmsgInit(kmsg)
		if err != nil {
			log(err)
		}
		return at
	})}
}

func (b *bootMilestones) set(p *time.Duration) {
	now := bootClock()
	b.mu.Lock()
	*p = now
	b.mu.Unlock()
}

// BootTimes implements BootTimer.
func (b *bootMilestones) BootTimes() *agentapi.BootTimes {
	init := b.init()
	b.mu.Lock()
	defer b.mu.Unlock()
	return &agentapi.BootTimes{Init: init, AgentMain: b.agentMain, KubeletStart: b.kubeletStart, Registered: b.registered, Uptime: bootClock()}
}

// bootMachine is the running guest that reports its boot's milestones.
type bootMachine struct {
	SystemMachine
	*bootMilestones
}

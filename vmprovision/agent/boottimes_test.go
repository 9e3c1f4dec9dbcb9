//go:build linux

package agent

import (
	"strings"
	"testing"
	"time"
)

func TestParseKmsg(t *testing.T) {
	for _, tc := range []struct {
		line string
		want KmsgRecord
		err  string
	}{
		{line: "6,339,2037024,-;Run /init as init process\n", want: KmsgRecord{At: 2037024 * time.Microsecond, Msg: "Run /init as init process"}},
		{line: "4,0,0,-,caller=T0;ACPI BIOS Error (bug): x", want: KmsgRecord{At: 0, Msg: "ACPI BIOS Error (bug): x"}},
		{line: "12,400,7527974,-;bootproof-agent: a;b", want: KmsgRecord{At: 7527974 * time.Microsecond, Msg: "bootproof-agent: a;b"}},
		{line: " SUBSYSTEM=pci", err: "no ';'"},
		{line: "6,339;msg", err: "want prio,seq,usec,flags"},
		{line: "6,339,x,-;msg", err: "not microseconds"},
		{line: "6,339,-5,-;msg", err: "not microseconds"},
	} {
		got, err := ParseKmsg(tc.line)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseKmsg(%q) = %+v, %v; want error %q", tc.line, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseKmsg(%q) = %+v, %v; want %+v", tc.line, got, err, tc.want)
		}
	}
}

func TestInitOnBootClock(t *testing.T) {
	const marker = "bootproof-agent: boot clock marker 1"
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	rec := func(at int, msg string) KmsgRecord { return KmsgRecord{At: ms(at), Msg: msg} }
	for _, tc := range []struct {
		name     string
		records  []KmsgRecord
		markerAt time.Duration
		want     time.Duration
		err      string
	}{
		{name: "same clocks", records: []KmsgRecord{rec(0, "Linux version"), rec(2037, kmsgRunInit), rec(2900, marker)}, markerAt: ms(2900), want: ms(2037)},
		// printk runs 54ms behind the boot clock: /init is 54ms later on it.
		{name: "printk behind", records: []KmsgRecord{rec(2037, kmsgRunInit), rec(2900, marker)}, markerAt: ms(2954), want: ms(2091)},
		{name: "first /init counts", records: []KmsgRecord{rec(2037, kmsgRunInit), rec(2500, kmsgRunInit), rec(2900, marker)}, markerAt: ms(2900), want: ms(2037)},
		{name: "last marker counts", records: []KmsgRecord{rec(2037, kmsgRunInit), rec(2100, marker), rec(2900, marker)}, markerAt: ms(2900), want: ms(2037)},
		{name: "no init", records: []KmsgRecord{rec(2900, marker)}, markerAt: ms(2900), err: "no \"Run /init"},
		{name: "no marker", records: []KmsgRecord{rec(2037, kmsgRunInit)}, markerAt: ms(2900), err: "no marker"},
		{name: "init after marker", records: []KmsgRecord{rec(3037, kmsgRunInit), rec(2900, marker)}, markerAt: ms(2900), err: "not within this boot"},
		{name: "init before boot", records: []KmsgRecord{rec(100, kmsgRunInit), rec(2900, marker)}, markerAt: ms(2000), err: "not within this boot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := InitOnBootClock(tc.records, marker, tc.markerAt)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %s, %v; want error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

package reports

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Absent is what a report shows for a figure that did not happen (a
// latency of a reload that never came); its reason is next to it, in a
// tooltip and the report's legend.
const Absent = "—"

// Why a latency or downtime is Absent, as the report's legend and
// tooltips say.
const (
	WhyNoDetection = "no loader (Load) worker pod was created for the node after its new boot became visible in the API"
	WhyNoReload    = "the kernel never held every module of the node's spec in the new boot before the case ended"
	WhyNoDowntime  = "unknown: no action started this reboot, so when the node went down was not seen"
)

// FormatMS renders a duration in milliseconds for a person: "529 ms"
// under a second, "5.3 s" under ten seconds, "42 s" under a minute, then
// "2 min 5 s" and "1 h 3 min". A negative value (a figure that did not
// happen) renders as Absent.
func FormatMS(ms int64) string {
	if ms < 0 {
		return Absent
	}
	if ms < 1000 {
		return fmt.Sprintf("%d ms", ms)
	}
	if tenths := math.Round(float64(ms) / 100); tenths < 100 {
		return fmt.Sprintf("%.1f s", tenths/10)
	}
	s := int64(math.Round(float64(ms) / 1000))
	switch {
	case s < 60:
		return fmt.Sprintf("%d s", s)
	case s < 3600:
		if s%60 == 0 {
			return fmt.Sprintf("%d min", s/60)
		}
		return fmt.Sprintf("%d min %d s", s/60, s%60)
	}
	m := (s + 30) / 60
	if m%60 == 0 {
		return fmt.Sprintf("%d h", m/60)
	}
	return fmt.Sprintf("%d h %d min", m/60, m%60)
}

// FormatDuration is FormatMS for a time.Duration.
func FormatDuration(d time.Duration) string { return FormatMS(d.Milliseconds()) }

// formatMSFloat is FormatMS for a figure computed as a float (a
// percentile).
func formatMSFloat(ms float64) string { return FormatMS(int64(math.Round(ms))) }

// headLength is how much of a message a report shows before the reader
// opens it.
const headLength = 140

// Message is a case or assertion message split for display: Head is its
// first line, cut at about headLength characters on a word boundary;
// Long is true when Head is not the whole message.
type Message struct {
	Head string
	Full string
	Long bool
}

// SplitMessage splits msg into what a report shows at once and the rest.
func SplitMessage(msg string) Message {
	m := Message{Head: msg, Full: msg}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		m.Head, m.Long = strings.TrimRight(msg[:i], " "), true
	}
	if utf8.RuneCountInString(m.Head) > headLength {
		cut := []rune(m.Head)[:headLength]
		if i := strings.LastIndexByte(string(cut), ' '); i > headLength/2 {
			cut = []rune(string(cut)[:i])
		}
		m.Head, m.Long = strings.TrimRight(string(cut), " ,;:")+" …", true
	}
	return m
}

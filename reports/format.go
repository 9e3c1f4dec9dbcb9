package reports

import (
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bootproof/bootproof/scenarios"
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

// FormatMS renders a duration in milliseconds for a person
// (scenarios.HumanMS: "529 ms", "5.3 s", "42 s", "2 min 5 s"); a
// negative value (a figure that did not happen) renders as Absent.
func FormatMS(ms int64) string {
	if ms < 0 {
		return Absent
	}
	return scenarios.HumanMS(ms)
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

package reports

import (
	"strings"
	"testing"

	"github.com/bootproof/bootproof/scenarios"
)

func TestFormatMS(t *testing.T) {
	for ms, want := range map[int64]string{
		-1: "—", 0: "0 ms", 529: "529 ms", 999: "999 ms", 1000: "1.0 s", 5291: "5.3 s", 9949: "9.9 s", 9951: "10 s",
		31000: "31 s", 59499: "59 s", 59500: "1 min", 125000: "2 min 5 s", 3599000: "59 min 59 s", 3600000: "1 h", 3780000: "1 h 3 min",
	} {
		if got := FormatMS(ms); got != want {
			t.Errorf("FormatMS(%d) = %q, want %q", ms, got, want)
		}
	}
}

func TestSplitMessage(t *testing.T) {
	long := strings.Repeat("module dummy not loaded in boot bbbbbbbb; ", 10)
	tests := []struct {
		name, msg string
		head      string
		long      bool
	}{
		{"empty", "", "", false},
		{"short", "reload: not loaded", "reload: not loaded", false},
		{"two lines", "first line\nsecond line", "first line", true},
		{"long line", long, "module dummy not loaded in boot bbbbbbbb; module dummy not loaded in boot bbbbbbbb; module dummy not loaded in boot bbbbbbbb; module dummy …", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := SplitMessage(tc.msg)
			if m.Head != tc.head || m.Long != tc.long || m.Full != tc.msg {
				t.Errorf("SplitMessage = %+v, want head %q, long %v", m, tc.head, tc.long)
			}
			if len([]rune(m.Head)) > headLength+2 {
				t.Errorf("head of %d characters", len([]rune(m.Head)))
			}
		})
	}
}

// reboot is a planned reboot with the given latencies (-1: did not
// happen).
func reboot(detection, reload int64) scenarios.RebootMetric {
	return scenarios.RebootMetric{Node: "n0", Planned: true, DowntimeMS: 1000, DetectionLatencyMS: detection, ReloadLatencyMS: reload}
}

func TestCaseFiguresAndState(t *testing.T) {
	tests := []struct {
		name                          string
		c                             scenarios.CaseResult
		state, key, reload, detection string
	}{
		{"pass, one reboot", scenarios.CaseResult{Verdict: "pass", Observed: "pass", Reboots: []scenarios.RebootMetric{reboot(120, 529)}},
			StatePass, "reload 529 ms", "529 ms", "120 ms"},
		{"pass, three reboots", scenarios.CaseResult{Verdict: "pass", Observed: "pass", Reboots: []scenarios.RebootMetric{reboot(100, 400), reboot(90, 1200), reboot(80, 500)}},
			StatePass, "reload 500 ms / 1.2 s", "500 ms / 1.2 s", "90 ms / 100 ms"},
		{"expected failure, never reloaded", scenarios.CaseResult{Verdict: "pass", Observed: "fail", Reboots: []scenarios.RebootMetric{reboot(-1, -1)}},
			StateExpectedFailure, "reload — (1 of 1 not reloaded)", "—", "—"},
		{"unexpected failure, one of two reloaded", scenarios.CaseResult{Verdict: "fail", Observed: "fail", Reboots: []scenarios.RebootMetric{reboot(50, 700), reboot(-1, -1)}},
			StateFail, "reload 700 ms (1 of 2 not reloaded)", "700 ms", "50 ms"},
		{"unexpected pass", scenarios.CaseResult{Verdict: "fail", Observed: "pass"}, StateFail, "no reboot", "—", "—"},
		{"error", scenarios.CaseResult{Verdict: "error", Observed: "error"}, StateError, "no reboot", "—", "—"},
		{"skipped", scenarios.CaseResult{Verdict: "skipped", Observed: "skipped"}, StateSkipped, "no reboot", "—", "—"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := CaseFigures(tc.c)
			if got := State(tc.c); got != tc.state {
				t.Errorf("State = %s, want %s", got, tc.state)
			}
			if got := f.KeyFigure(); got != tc.key {
				t.Errorf("KeyFigure = %q, want %q", got, tc.key)
			}
			if got := pair(f.Reload); got != tc.reload {
				t.Errorf("reload = %q, want %q", got, tc.reload)
			}
			if got := pair(f.Detection); got != tc.detection {
				t.Errorf("detection = %q, want %q", got, tc.detection)
			}
			if Glyph(tc.state) == "" || StateLabel(tc.state) == "" || StateMeaning(tc.state) == "" {
				t.Errorf("state %s has no glyph, label or meaning", tc.state)
			}
		})
	}
}

func TestSubjectSummaries(t *testing.T) {
	var r scenarios.Results
	add := func(subject, scenario, verdict, observed string) {
		r.Cases = append(r.Cases, scenarios.CaseResult{Subject: subject, Scenario: scenario, Verdict: verdict, Observed: observed})
	}
	for _, s := range []string{"a", "b", "c"} {
		add("bootid", s, "pass", "pass")
		add("legacy", s, "pass", "fail")
	}
	add("kmm-upstream", "fast", "pass", "pass")
	add("kmm-upstream", "double-reboot", "fail", "fail")
	add("kmm-upstream", "repeated-reboots", "fail", "fail")
	add("kmm-upstream", "control", "fail", "pass")
	add("kmm-upstream", "slow", "error", "error")
	add("kmm-upstream", "panic", "skipped", "skipped")
	var got []string
	for _, s := range Summaries(r) {
		got = append(got, s.Line())
	}
	want := []string{
		"bootid: 3 of 3 as expected",
		"legacy: 3 of 3 as expected (3 expected failures)",
		"kmm-upstream: 1 of 6 as expected; 2 unexpected failures: double-reboot, repeated-reboots; " +
			"1 unexpected pass (the harness did not catch the bug): control; 1 error: slow; 1 skipped: panic",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("summary lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s := Summaries(r); !s[0].AllAsExpected() || !s[1].AllAsExpected() || s[2].AllAsExpected() {
		t.Errorf("AllAsExpected: %v %v %v", s[0].AllAsExpected(), s[1].AllAsExpected(), s[2].AllAsExpected())
	}
}

// TestLatencyChart: one bar pair per case with reboots, "no reboot" for
// a case without, Absent with the reason for a case that never reloaded,
// and an axis that covers the largest figure.
func TestLatencyChart(t *testing.T) {
	r := scenarios.Results{Cases: []scenarios.CaseResult{
		{Scenario: "fast", Subject: "bootid", Verdict: "pass", Observed: "pass", Reboots: []scenarios.RebootMetric{reboot(100, 400), reboot(90, 1300)}},
		{Scenario: "fast", Subject: "legacy", Verdict: "pass", Observed: "fail", Reboots: []scenarios.RebootMetric{reboot(-1, -1)}},
		{Scenario: "control", Subject: "bootid", Verdict: "pass", Observed: "pass"},
	}}
	p := BuildLatencyChart(r)
	var texts []string
	for _, x := range p.Texts {
		texts = append(texts, x.Text)
		if strings.HasPrefix(x.Text, "reload "+Absent) && !strings.Contains(x.Title, WhyNoReload) {
			t.Errorf("%q has no reason as its tooltip", x.Text)
		}
	}
	all := strings.Join(texts, "|")
	for _, want := range []string{"|fast|", "|control|", "reload 400 ms / 1.3 s · detection 90 ms / 100 ms", "reload — (not reloaded)", "no reboot (pass)", "|2.0 s|"} {
		if !strings.Contains("|"+all+"|", want) {
			t.Errorf("chart texts lack %q: %s", want, all)
		}
	}
	bars := 0
	for _, x := range p.Rects {
		if strings.Contains(x.Title, "latency p50") {
			bars++
			if x.W <= 0 || x.X+x.W > chLeft+chPlot {
				t.Errorf("bar %q out of the plot: x %v w %v", x.Title, x.X, x.W)
			}
		}
	}
	if bars != 2 {
		t.Errorf("%d bars, want detection and reload of the one case that reloaded", bars)
	}
	if p.Height <= chTop || p.Width != chLeft+chPlot+chRight {
		t.Errorf("chart of %vx%v", p.Width, p.Height)
	}
}

// TestLatencyChartShowsLateReloads: a case's service level is on its
// label, and a late reload (reload-slo) turns it red with the count and
// the service level's rule as its tooltip.
func TestLatencyChartShowsLateReloads(t *testing.T) {
	slo := func(late bool) scenarios.AssertionResult {
		return scenarios.AssertionResult{Name: scenarios.AssertReloadSLO, OK: !late,
			Reloads: []scenarios.ReloadLatency{{Node: "n0", BootID: "b", LatencyMS: 400, WindowMS: 400, SLOMS: 15000}, {Node: "n0", BootID: "c", LatencyMS: 18000, WindowMS: 18000, SLOMS: 15000, Late: late}}}
	}
	bound := &scenarios.ReloadBoundResult{Rule: "10 x the slowest load measured, at least 15s", FirstLoadMS: 300, BoundMS: 15000, DeadlineMS: 30000}
	r := scenarios.Results{Cases: []scenarios.CaseResult{
		{Scenario: "repeated", Subject: "bootid", Verdict: "pass", Observed: "pass", ReloadBound: bound, Assertions: []scenarios.AssertionResult{slo(false)},
			Reboots: []scenarios.RebootMetric{reboot(100, 400), reboot(90, 18000)}},
		{Scenario: "repeated", Subject: "stale", Verdict: "fail", Observed: "fail", ReloadBound: bound, Assertions: []scenarios.AssertionResult{slo(true)},
			Reboots: []scenarios.RebootMetric{reboot(100, 400), reboot(90, 18000)}},
	}}
	var labels []Text
	for _, x := range BuildLatencyChart(r).Texts {
		if strings.HasPrefix(x.Text, "reload ") {
			labels = append(labels, x)
		}
	}
	if len(labels) != 2 {
		t.Fatalf("labels %+v", labels)
	}
	if !strings.HasSuffix(labels[0].Text, " · SLO 15 s") || labels[0].Fill == "#b00020" {
		t.Errorf("on time: %+v", labels[0])
	}
	if !strings.HasSuffix(labels[1].Text, " · SLO 15 s: 1 late") || labels[1].Fill != "#b00020" || !strings.Contains(labels[1].Title, "at least 15s") {
		t.Errorf("late: %+v", labels[1])
	}
}

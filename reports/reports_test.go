package reports

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/scenarios/trace"
)

func sample() scenarios.Results {
	trace := []trace.Event{
		{TMS: 0, Kind: trace.KindReady, Node: "n0", Ready: "True"},
		{TMS: 0, Kind: trace.KindBoot, Node: "n0", BootID: "aaaaaaaa-1"},
		{TMS: 100, Kind: trace.KindHeartbeat, Node: "n0"},
		{TMS: 300, Kind: trace.KindPod, Node: "n0", Pod: "kmm-worker-n0-dummy", WorkerAction: contract.ActionLoad, Phase: trace.PhaseCreated, Detail: "Load created"},
		{TMS: 500, Kind: trace.KindLoad, Node: "n0", Pod: "kmm-worker-n0-dummy", Module: "dummy", BootID: "aaaaaaaa-1", WorkerAction: contract.ActionLoad, Detail: "Load"},
		{TMS: 510, Kind: trace.KindTruth, Node: "n0", BootID: "aaaaaaaa-1", Modules: []string{"dummy"}, Detail: "dummy"},
		{TMS: 1000, Kind: trace.KindAction, Node: "n0", Action: scenarios.ActReboot, Phase: trace.PhaseStart, DowntimeMS: 3000, Detail: "reboot (downtime 3s)"},
		{TMS: 4000, Kind: trace.KindBoot, Node: "n0", BootID: "bbbbbbbb-2"},
		{TMS: 4010, Kind: trace.KindTruth, Node: "n0", BootID: "bbbbbbbb-2"},
		{TMS: 4500, Kind: trace.KindTruth, Node: "n0", BootID: "bbbbbbbb-2", Modules: []string{"dummy"}, Detail: "dummy"},
	}
	reboot := []scenarios.RebootMetric{{Node: "n0", OldBootID: "aaaaaaaa-1", NewBootID: "bbbbbbbb-2", Planned: true, DowntimeMS: 3000,
		DetectionLatencyMS: 200, ReloadLatencyMS: 500, StartMS: 1000, BootVisibleMS: 4000}}
	return scenarios.Results{Environment: map[string]string{"nodes": "libvirt", "accelerator": "tcg"}, Cases: []scenarios.CaseResult{
		{Scenario: "fast-reboot-0.5g", Subject: "bootid", Cluster: "embedded", Nodes: "fake", NodeCount: 1, Expected: "pass", Observed: "pass", Verdict: "pass",
			DurationMS: 6000, GracePeriodMS: 10000, Trace: trace, Reboots: reboot,
			Assertions: []scenarios.AssertionResult{{Name: "reload", OK: true}}},
		{Scenario: "fast-reboot-0.5g", Subject: "legacy", Cluster: "embedded", Nodes: "fake", NodeCount: 1, Expected: "pass", Observed: "fail", Verdict: "fail",
			Message: "reload: module dummy not loaded in boot bbbbbbbb <&> \"quoted\"", DurationMS: 31000, Trace: trace[:8],
			Assertions: []scenarios.AssertionResult{{Name: "reload", OK: false, Message: "not loaded"}}},
		{Scenario: "slow-reboot-3g", Subject: "bootid", Cluster: "embedded", Nodes: "fake", Expected: "pass", Observed: "error", Verdict: "error",
			Message: "invalid run: precondition", DurationMS: 12000},
		{Scenario: "panic", Subject: "bootid", Cluster: "embedded", Nodes: "fake", Verdict: "skipped", Observed: "skipped", Message: "backend fake cannot reboot in mode panic"},
	}}
}

// TestJUnitAgainstSchema validates junit.xml with xmllint against the
// JUnit schema in testdata.
func TestJUnitAgainstSchema(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("BOOTPROOF_REQUIRE_TOOLS") == "1" {
			t.Fatal("xmllint is required (Debian package libxml2-utils; .ci/run installs it)")
		}
		t.Skip("needs xmllint (Debian package libxml2-utils) to validate against the JUnit schema")
	}
	path := filepath.Join(t.TempDir(), JUnitFile)
	if err := WriteJUnit(path, "bootproof", sample(), time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(xmllint, "--noout", "--schema", "testdata/junit.xsd", path).CombinedOutput()
	if err != nil {
		t.Fatalf("junit.xml does not validate: %v\n%s", err, out)
	}
	// The schema itself must reject what Jenkins would: a testcase with
	// two outcomes.
	bad := filepath.Join(t.TempDir(), "bad.xml")
	if err := os.WriteFile(bad, []byte(`<testsuites><testsuite name="s" tests="1" failures="1" errors="1"><testcase name="c" classname="k" time="1"><error message="e"/><failure message="f"/></testcase></testsuite></testsuites>`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(xmllint, "--noout", "--schema", "testdata/junit.xsd", bad).Run(); err == nil {
		t.Fatal("the schema accepted a testcase with both error and failure")
	}
}

func TestJUnitContent(t *testing.T) {
	j := BuildJUnit("bootproof", sample(), time.Now())
	if len(j.Suites) != 1 || j.Tests != 4 || j.Failures != 1 || j.Errors != 1 || j.Skipped != 1 {
		t.Fatalf("counts: %+v", j)
	}
	cs := j.Suites[0].Cases
	if cs[0].Name != "[bootid] fast-reboot-0.5g (fake, embedded)" || cs[0].Failure != nil || cs[0].Error != nil {
		t.Errorf("passing case: %+v", cs[0])
	}
	if cs[1].Failure == nil || !strings.Contains(cs[1].Failure.Message, "not loaded") || !strings.Contains(cs[1].SystemOut, "reboot (downtime 3s)") {
		t.Errorf("failed case: failure %+v, system-out %q", cs[1].Failure, cs[1].SystemOut)
	}
	if cs[2].Error == nil || cs[3].Skipped == nil || !strings.Contains(cs[3].Skipped.Message, "panic") {
		t.Errorf("error/skipped cases: %+v %+v", cs[2], cs[3])
	}
}

// TestHTMLReport renders the report and checks it is well-formed XML with
// one SVG timeline per case that has a trace, and that text is escaped.
func TestHTMLReport(t *testing.T) {
	r := sample()
	data, err := RenderHTML(r, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	html := string(data)
	d := xml.NewDecoder(strings.NewReader(strings.Replace(html, "<!DOCTYPE html>", "", 1)))
	d.Strict = true
	d.Entity = xml.HTMLEntity
	svgs := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("index.html is not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "svg" {
			svgs++
		}
	}
	if svgs != len(r.Cases)+1 {
		t.Errorf("%d SVG pictures for %d cases: want a timeline per case and the latency chart", svgs, len(r.Cases))
	}
	for _, want := range []string{"Ready=True", "boot aaaaaaaa", "reload 500 ms", "grace", "&lt;&amp;&gt;"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(html, "<&>") {
		t.Error("a message was not escaped")
	}
}

func TestWriteAllAndSummary(t *testing.T) {
	dir := t.TempDir()
	step := filepath.Join(t.TempDir(), "step-summary.md")
	t.Setenv("GITHUB_STEP_SUMMARY", step)
	if err := Write(dir, sample(), time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ResultsFile, TraceFile, JUnitFile, HTMLFile, SummaryFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	r, err := ReadResults(filepath.Join(dir, ResultsFile))
	if err != nil || len(r.Cases) != 4 || r.Cases[0].Reboots[0].ReloadLatencyMS != 500 {
		t.Errorf("results.json round trip: %+v, %v", r, err)
	}
	md, err := os.ReadFile(step)
	if err != nil || !strings.Contains(string(md), "1 passed, 1 failed, 1 errors, 1 skipped") {
		t.Errorf("$GITHUB_STEP_SUMMARY: %q, %v", md, err)
	}
	// The environment is in every report, sorted by key.
	for f, want := range map[string]string{
		SummaryFile: "Environment: accelerator=tcg, nodes=libvirt",
		HTMLFile:    "Environment: <code>accelerator=tcg, nodes=libvirt</code>",
		JUnitFile:   `<property name="accelerator" value="tcg"></property>`,
		ResultsFile: `"accelerator": "tcg"`,
	} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q (%v)", f, want, err)
		}
	}
}

func TestSummarize(t *testing.T) {
	d := Summarize("ms", []float64{5, 1, 4, 2, 3, 100, 6, 7, 8, 9})
	if d.Min != 1 || d.Max != 100 || d.P50 != 5 || d.P90 != 9 || d.P95 != 100 || d.Count != 10 {
		t.Errorf("Summarize = %+v", d)
	}
	if e := Summarize("ms", nil); e.Count != 0 {
		t.Errorf("empty: %+v", e)
	}
}

func TestRewrite(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, sample(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, HTMLFile)); err != nil {
		t.Fatal(err)
	}
	r, err := Rewrite(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cases) != 4 || len(r.Cases[0].Trace) != 10 {
		t.Errorf("rewritten results: %d cases, %d trace events in the first", len(r.Cases), len(r.Cases[0].Trace))
	}
	html, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil || !strings.Contains(string(html), "boot aaaaaaaa") {
		t.Errorf("index.html not rewritten with the trace: %v", err)
	}
	if _, err := Rewrite(t.TempDir()); err == nil {
		t.Error("Rewrite of an empty directory succeeded")
	}
}

func TestBenchNumbers(t *testing.T) {
	for v, want := range map[float64]string{10153: "10153", 8609: "8609", 23.5: "23.5", 0.01234: "0.01234", 371.4: "371.4", 1.5e6: "1500000"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestBenchComparison: a comparison is a side-by-side table before the
// figures, with a ratio only where one is given, and survives JSON.
func TestBenchComparison(t *testing.T) {
	dir := t.TempDir()
	r := BenchResult{Name: "cmp", Description: "d", Date: time.Now(), Machine: "m", Figures: map[string]Distribution{"x": Summarize("s", []float64{1})},
		Comparison: &BenchComparison{Sides: [2]string{"a", "b"}, Rows: []ComparisonRow{
			RatioRow("cpu", "CPU s/min", 3, 4), Row("late p99", "ms", 10, 20), RatioRow("zero", "MiB", 1, 0)}}}
	if err := WriteBench(dir, r); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "cmp.md"))
	for _, want := range []string{"| figure | unit | a | b | a/b |", "| cpu | CPU s/min | 3 | 4 | 0.75 |", "| late p99 | ms | 10 | 20 | - |", "| zero | MiB | 1 | 0 | - |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("cmp.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Index(string(md), "a/b") > strings.Index(string(md), "| figure | unit | n |") {
		t.Errorf("the comparison does not come before the figures:\n%s", md)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "cmp.json"))
	var back BenchResult
	if err := json.Unmarshal(data, &back); err != nil || back.Comparison == nil || *back.Comparison.Rows[0].Ratio != 0.75 || back.Comparison.Rows[1].Ratio != nil {
		t.Errorf("cmp.json: %v %+v", err, back.Comparison)
	}
}

// TestBenchRequests: API request counts are a table of their own after
// the figures, per unit of work, and survive JSON.
func TestBenchRequests(t *testing.T) {
	dir := t.TempDir()
	r := BenchResult{Name: "req", Description: "d", Date: time.Now(), Machine: "m", Figures: map[string]Distribution{"x": Summarize("ms", []float64{1, 2})},
		Requests: &RequestTable{Unit: "reload", Units: 4, Window: "the whole case", Rows: []RequestCount{
			{Client: "reconciler", Verb: "create", Resource: "pods", Total: 4, PerUnit: 1},
			{Client: "kubelet", Verb: "patch", Resource: "pods/status", Total: 9, PerUnit: 2.25}}}}
	if err := WriteBench(dir, r); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "req.md"))
	for _, want := range []string{"API requests per reload (4 reloads; the whole case)", "| client | verb | resource | total | per reload |",
		"| reconciler | create | pods | 4 | 1.00 |", "| kubelet | patch | pods/status | 9 | 2.25 |", "| x | ms | 2 | 1 | 1 | 2 | 2 | 2 | 2 |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("req.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Index(string(md), "| client |") < strings.Index(string(md), "| figure | unit | n |") {
		t.Errorf("the request table comes before the figures:\n%s", md)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "req.json"))
	var back BenchResult
	if err := json.Unmarshal(data, &back); err != nil || back.Requests == nil || len(back.Requests.Rows) != 2 || back.Requests.Rows[1].PerUnit != 2.25 {
		t.Errorf("req.json: %v %+v", err, back.Requests)
	}
}

// TestConformanceMatrix: scenarios as rows, subjects as columns, each
// cell the case's verdict with observed and expected; index.html and
// summary.md open with it.
func TestConformanceMatrix(t *testing.T) {
	r := sample()
	r.Cases[1].Expected, r.Cases[1].ExpectedAssertions = "fail", []string{"reload"}
	m := BuildMatrix(r)
	if strings.Join(m.Subjects, ",") != "bootid,legacy" || len(m.Rows) != 3 {
		t.Fatalf("matrix %+v", m)
	}
	if c := m.Rows[0].Cells[1]; m.Rows[0].Scenario != "fast-reboot-0.5g" || c.Case != 1 || c.Verdict != "fail" || c.Observed != "fail" || c.Expected != "fail:reload" ||
		c.State != StateFail || c.Figures.Reboots != 0 {
		t.Errorf("row 0: %+v", m.Rows[0])
	}
	if c := m.Rows[0].Cells[0]; c.State != StatePass || c.Figures.KeyFigure() != "reload 500 ms" {
		t.Errorf("bootid cell: state %s, key figure %q", c.State, c.Figures.KeyFigure())
	}
	if c := m.Rows[1].Cells[1]; c.Case != -1 {
		t.Errorf("slow-reboot-3g did not run with legacy, cell %+v", c)
	}
	md := Summary(r)
	first := strings.Index(md, "| scenario | bootid | legacy |")
	if first < 0 || first > strings.Index(md, "| verdict |") {
		t.Errorf("summary.md does not open with the matrix:\n%s", md)
	}
	for _, want := range []string{"| fast-reboot-0.5g | [✅ pass](index.html#case-0) · reload 500 ms | [❌ fail](index.html#case-1) observed fail, expected fail:reload · no reboot |",
		"| slow-reboot-3g | [⚠️ error](index.html#case-2) observed error, expected pass · no reboot | not run |",
		"- ❌ legacy: 0 of 1 as expected; 1 unexpected failure: fast-reboot-0.5g\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
	html, err := RenderHTML(r, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	h := string(html)
	if i, j := strings.Index(h, "<h2>Conformance</h2>"), strings.Index(h, "<h2>Cases</h2>"); i < 0 || j < i {
		t.Errorf("index.html does not open with the conformance matrix")
	}
	if !strings.Contains(h, `<td class="cell fail" title="fail: observed fail, expected fail:reload"><a href="#case-1"><span class="glyph fail">✘</span> fail</a><div class="fig">no reboot</div><small>observed fail / expected fail:reload</small></td>`) {
		t.Errorf("index.html lacks the legacy cell linking to its case")
	}
}

// TestPartlyJudgedShown: a consistency assertion whose boot part was not
// judged (an API without boot IDs) shows as partly judged in summary.md
// (matrix cell and case message), the HTML matrix cell, JUnit and
// results.json, and a case judged whole shows no such mark.
func TestPartlyJudgedShown(t *testing.T) {
	r := sample()
	why := "boot part not judged: the NodeModulesConfig CRD has no status.modules[].bootId, so only which modules are listed is compared"
	r.Cases[0].Assertions = append(r.Cases[0].Assertions, scenarios.AssertionResult{Name: "consistency", OK: true, Message: "matches (" + why + ")", NotJudged: why})
	md := Summary(r)
	for _, want := range []string{"[✅ pass](index.html#case-0) · ⚠️ partly judged: consistency: boot part not judged: the NodeModulesConfig CRD has no status.modules[].bootId",
		"(consistency: " + why} {
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Count(md, "partly judged") != 1 {
		t.Errorf("summary.md marks %d cells partly judged, want 1:\n%s", strings.Count(md, "partly judged"), md)
	}
	html, err := RenderHTML(r, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), `<div class="unjudged" title="consistency: `+why+`">⚠️ partly judged</div></td>`) || strings.Count(string(html), `class="unjudged"`) != 1 {
		t.Errorf("index.html lacks the partly judged mark on the bootid cell alone")
	}
	j := BuildJUnit("bootproof", r, time.Now())
	if out := j.Suites[0].Cases[0].SystemOut; !strings.Contains(out, "ok   consistency: matches") || !strings.Contains(out, "     consistency: "+why) {
		t.Errorf("junit system-out:\n%s", out)
	}
	b, err := json.Marshal(r.Cases[0])
	if err != nil || !strings.Contains(string(b), `"not_judged":"`+why+`"`) {
		t.Errorf("results.json case: %s (%v)", b, err)
	}
}

// TestRepeatCounts: the runs of a pair ('run --repeat') share one matrix
// cell, which counts what they observed and shows the worst state, so a
// failure that came once in three shows; each case keeps its own name.
func TestRepeatCounts(t *testing.T) {
	r := sample()
	first := r.Cases[0]
	first.Attempt = 1
	second, third := first, first
	second.Attempt, third.Attempt = 2, 3
	second.Observed, second.Verdict, second.Message = "fail", "fail", "reload: not loaded"
	r.Cases = append([]scenarios.CaseResult{first, second, third}, r.Cases[1:]...)
	m := BuildMatrix(r)
	c := m.Rows[0].Cells[0]
	if c.Case != 0 || c.Runs != 3 || c.State != StateFail || c.Repeats() != "fail 1 of 3, pass 2 of 3" {
		t.Errorf("cell of three runs: %+v (%q)", c, c.Repeats())
	}
	if once := m.Rows[0].Cells[1]; once.Runs != 1 || once.Repeats() != "" {
		t.Errorf("cell of one run: %+v", once)
	}
	md := Summary(r)
	if !strings.Contains(md, "| fast-reboot-0.5g | [❌ fail](index.html#case-0) observed fail 1 of 3, pass 2 of 3, expected pass · reload 500 ms |") {
		t.Errorf("summary.md lacks the counted cell:\n%s", md)
	}
	html, err := RenderHTML(r, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), `<div class="repeats">observed fail 1 of 3, pass 2 of 3</div>`) {
		t.Errorf("index.html lacks the counted cell")
	}
	if got := CaseName(second); got != "[bootid] fast-reboot-0.5g (fake, embedded) #2" {
		t.Errorf("CaseName = %q", got)
	}
}

// results.json writes [] for empty lists, never null.
func TestResultsEmptyLists(t *testing.T) {
	dir := t.TempDir()
	r := scenarios.Results{Cases: []scenarios.CaseResult{{Scenario: "s", Subject: "bootid", Verdict: "skipped"}}}
	if err := Write(dir, r, time.Now()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "null") || !strings.Contains(string(data), `"assertions": []`) || !strings.Contains(string(data), `"reboots": []`) {
		t.Errorf("results.json:\n%s", data)
	}
	if err := Write(dir, scenarios.Results{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(filepath.Join(dir, ResultsFile))
	if !strings.Contains(string(data), `"cases": []`) {
		t.Errorf("results.json of no cases:\n%s", data)
	}
	if r.Cases[0].Assertions != nil {
		t.Error("Write changed the caller's results")
	}
}

// An unplanned reboot is drawn, and its row says so.
func TestUnplannedRebootShown(t *testing.T) {
	r := sample()
	c := &r.Cases[0]
	c.Reboots = append(c.Reboots, scenarios.RebootMetric{Node: "n0", OldBootID: "bbbbbbbb-2", NewBootID: "cccccccc-3", Planned: false,
		DowntimeMS: -1, DetectionLatencyMS: -1, ReloadLatencyMS: -1, StartMS: 4500, BootVisibleMS: 4500})
	tl := BuildTimeline(*c)
	drawn := false
	for _, l := range tl.Lines {
		if strings.Contains(l.Title, "unplanned reboot: boot bbbbbbbb -> cccccccc") {
			drawn = true
		}
	}
	if !drawn {
		t.Error("the unplanned reboot is not drawn")
	}
	html, err := RenderHTML(r, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), `<td><b>no</b></td><td class="absent" title="`+WhyNoDowntime+`">—</td>`) {
		t.Error("the reboot table does not mark the unplanned reboot")
	}
	for _, sentinel := range []string{">-1", "-1ms", "-1 ms"} {
		if strings.Contains(string(html), sentinel) {
			t.Errorf("the report shows a sentinel (%q)", sentinel)
		}
	}
}

// The soak table marks a case whose verdict changed between runs.
func TestSoak(t *testing.T) {
	a, b := sample(), sample()
	b.Cases[0].Verdict, b.Cases[0].Message = "error", "cluster fault"
	s := BuildSoak(map[string]scenarios.Results{"run-10": a, "run-2": b, "run-1": a})
	if strings.Join(s.Runs, ",") != "run-1,run-2,run-10" || s.Flaky != 1 || len(s.Cases) != 4 {
		t.Fatalf("soak %+v", s)
	}
	md := SoakMarkdown(s)
	if !strings.Contains(md, "# Soak: 3 runs, 4 cases, 1 flaky") || !strings.Contains(md, "| pass | **error** | pass | yes |") || !strings.Contains(md, "run-2: cluster fault") {
		t.Errorf("soak.md:\n%s", md)
	}
}

// TestBenchTable: a table comes before the figures, with units in the
// header, "-" past a short row's values, the note last, and survives JSON.
func TestBenchTable(t *testing.T) {
	dir := t.TempDir()
	r := BenchResult{Name: "tab", Description: "d", Date: time.Now(), Machine: "m", Figures: map[string]Distribution{"x": Summarize("s", []float64{1})},
		Table: &BenchTable{Columns: []TableColumn{{Name: "N"}, {Name: "cpu", Unit: "CPU s/min"}, {Name: "late p99", Unit: "ms"}},
			Rows: []TableRow{{Values: []float64{1000, 6.5, 120}}, {Values: []float64{2000}, Note: "not all Ready"}}}}
	if err := WriteBench(dir, r); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "tab.md"))
	for _, want := range []string{"| N | cpu (CPU s/min) | late p99 (ms) | note |\n|---|---|---|---|\n", "| 1000 | 6.5 | 120 |  |\n", "| 2000 | - | - | not all Ready |\n"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("tab.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Index(string(md), "| N |") > strings.Index(string(md), "| figure | unit | n |") {
		t.Errorf("the table does not come before the figures:\n%s", md)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "tab.json"))
	var back BenchResult
	if err := json.Unmarshal(data, &back); err != nil || back.Table == nil || len(back.Table.Rows) != 2 || back.Table.Rows[1].Note != "not all Ready" {
		t.Errorf("tab.json: %v %+v", err, back.Table)
	}
}

// TestDetailsCarried: an assertion's every piece of evidence reaches
// results.json, JUnit's system-out (one a line) and the HTML case (a
// collapsed list), while the verdict's message, the JUnit failure and
// the Markdown summary carry only the message that names the first few.
func TestDetailsCarried(t *testing.T) {
	dir := t.TempDir()
	r := goldenResults()
	c := manyNodeCase()
	a := c.Assertions[0]
	if len(a.Details) <= scenarios.DetailsShown {
		t.Fatalf("the fixture has %d details, want more than the %d a message names", len(a.Details), scenarios.DetailsShown)
	}
	r.Cases = []scenarios.CaseResult{c}
	r.Cases[0].Verdict, r.Cases[0].Expected = scenarios.Fail, scenarios.Pass // a JUnit failure
	if err := Write(dir, r, time.Now()); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResults(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Cases[0].Assertions[0].Details; !slices.Equal(got, a.Details) {
		t.Errorf("results.json details %+v, want %+v", got, a.Details)
	}
	j := BuildJUnit("bootproof", r, time.Now())
	tc := j.Suites[0].Cases[0]
	hidden := a.Details[len(a.Details)-1] // sorted last: not in the message
	line := "node " + hidden.Node + ": " + hidden.Evidence
	if strings.Contains(a.Message, hidden.Node) {
		t.Fatalf("message %q names %s, which it should leave to the details", a.Message, hidden.Node)
	}
	for _, d := range a.Details {
		if !strings.Contains(tc.SystemOut, "\n       node "+d.Node+": "+d.Evidence+"\n") {
			t.Errorf("JUnit system-out lacks %s's evidence on a line of its own:\n%s", d.Node, tc.SystemOut)
		}
	}
	if tc.Failure == nil || strings.Contains(tc.Failure.Message, line) || strings.Contains(tc.Failure.Body, line) {
		t.Errorf("JUnit failure %+v: want the summarised message only", tc.Failure)
	}
	html, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(html), "<li><b>"); !strings.Contains(string(html), `<details class="evidence">`) || n != len(a.Details) {
		t.Errorf("index.html lists %d pieces of evidence in a collapsed list, want %d", n, len(a.Details))
	}
	md, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(md), hidden.Node) {
		t.Errorf("summary.md names %s, which only results.json should", hidden.Node)
	}
}

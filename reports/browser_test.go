package reports

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bootproof/bootproof/scenarios"
)

// Environment of TestReportInChromium.
const (
	// envChromium names the browser binary (default: chromium, then
	// chromium-browser, google-chrome on $PATH).
	envChromium = "BOOTPROOF_CHROMIUM"
	// envRequireChromium=1 fails the test when no browser is found.
	envRequireChromium = "BOOTPROOF_REQUIRE_CHROMIUM"
	// envScreenshotDir, when set, receives report.png, the whole page
	// as the test saw it.
	envScreenshotDir = "BOOTPROOF_SCREENSHOT_DIR"
)

// findChromium returns the browser to test with, or skips (fails under
// BOOTPROOF_REQUIRE_CHROMIUM=1) naming what is missing.
func findChromium(t *testing.T) string {
	t.Helper()
	names := []string{"chromium", "chromium-browser", "google-chrome"}
	if p := os.Getenv(envChromium); p != "" {
		names = []string{p}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := "needs Chromium (Debian package chromium, or $" + envChromium + ") to check the HTML report as a browser renders it; looked for " + strings.Join(names, ", ")
	if os.Getenv(envRequireChromium) == "1" {
		t.Fatal(msg + " ($" + envRequireChromium + "=1)")
	}
	t.Skip(msg)
	return ""
}

// browserResults are the golden results with a long, multi-sentence
// message, so every state, a never-reloaded reboot, an unplanned reboot
// and a collapsed message are on the page.
func browserResults() scenarios.Results {
	r := goldenResults()
	r.Cases[1].Message = "reload: " + strings.Repeat("node n0: module dummy not loaded in boot bbbbbbbb (Ready True, NMC status says loaded in bbbbbbbb, pod kmm-worker-n0-dummy Succeeded in boot aaaaaaaa); ", 5)
	r.Cases[1].Reboots = []scenarios.RebootMetric{{Node: "n0", OldBootID: "aaaaaaaa-1", NewBootID: "bbbbbbbb-2", Planned: true, DowntimeMS: 3000,
		DetectionLatencyMS: -1, ReloadLatencyMS: -1, StartMS: 1000, BootVisibleMS: 4000}}
	return r
}

// pageFacts is what the test reads from the rendered page.
type pageFacts struct {
	Text    string `json:"text"`
	Scripts int    `json:"scripts"`
	Summary []struct {
		Text string `json:"text"`
		Bad  bool   `json:"bad"`
	} `json:"summary"`
	Cells []struct {
		State      string `json:"state"`
		Glyph      string `json:"glyph"`
		GlyphColor string `json:"glyphColor"`
		Background string `json:"background"`
		Figure     string `json:"figure"`
	} `json:"cells"`
	Chart struct {
		Width  float64 `json:"width"`
		Height float64 `json:"height"`
		Bars   int     `json:"bars"`
	} `json:"chart"`
	Details []struct {
		Summary     string  `json:"summary"`
		Open        bool    `json:"open"`
		SummaryH    float64 `json:"summaryH"`
		BodyVisible bool    `json:"bodyVisible"`
		BodyFullLen int     `json:"bodyFullLen"`
	} `json:"details"`
	Absent []struct {
		Text  string `json:"text"`
		Title string `json:"title"`
	} `json:"absent"`
}

// factsJS reads pageFacts in the page (the report itself has no script;
// this runs through the DevTools protocol).
const factsJS = `(() => {
  const q = (s, el) => [...(el || document).querySelectorAll(s)];
  const svg = document.querySelector('#latency-chart svg');
  const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  return {
    text: document.body.innerText,
    scripts: document.scripts.length,
    summary: q('#summary li').map(li => ({text: li.innerText, bad: li.classList.contains('bad')})),
    cells: q('#matrix td.cell').map(td => {
      const g = td.querySelector('span.glyph');
      return {state: td.classList[1], glyph: g.innerText, glyphColor: getComputedStyle(g).color,
        background: getComputedStyle(td).backgroundColor, figure: td.querySelector('.fig').innerText};
    }),
    chart: {width: box.width, height: box.height,
      bars: svg ? q('rect > title', svg).filter(t => t.textContent.includes('latency p50')).length : 0},
    details: q('#cases details.msg').map(d => ({summary: d.querySelector('summary').innerText, open: d.open,
      summaryH: d.querySelector('summary').getBoundingClientRect().height,
      bodyVisible: d.querySelector('div').checkVisibility(), bodyFullLen: d.querySelector('div').textContent.length})),
    absent: q('td.absent').map(td => ({text: td.innerText, title: td.title})),
  };
})()`

// TestReportInChromium renders index.html in headless Chromium and checks
// what a person sees: a summary line per subject, matrix cells with a
// glyph, a colour per state and the key figure, the latency chart laid
// out, long messages collapsed to their first line and opened by a
// click, no sentinel values and no unrounded durations, and no script.
func TestReportInChromium(t *testing.T) {
	browser := findChromium(t)
	dir := t.TempDir()
	r := browserResults()
	if err := Write(dir, r, time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	ctx := openInChromium(t, browser, filepath.Join(dir, HTMLFile), "#matrix")
	facts, err := chromedp.Run(ctx, chromedp.Evaluate[pageFacts](factsJS))
	if err != nil {
		t.Fatal(err)
	}
	if d := os.Getenv(envScreenshotDir); d != "" {
		screenshot(ctx, t, filepath.Join(d, "report.png"))
	}
	checkPageText(t, facts, r)
	checkMatrix(t, facts)
	checkMessagesAndAbsent(t, facts)
	if facts.Chart.Width < 500 || facts.Chart.Height < 100 || facts.Chart.Bars == 0 {
		t.Errorf("latency chart laid out %vx%v with %d bars", facts.Chart.Width, facts.Chart.Height, facts.Chart.Bars)
	}

	// A click opens a collapsed message: no script needed.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#cases details.msg summary"))); err != nil {
		t.Fatal(err)
	}
	opened, err := chromedp.Run(ctx, chromedp.Evaluate[pageFacts](factsJS))
	if err != nil {
		t.Fatal(err)
	}
	if len(opened.Details) == 0 || !opened.Details[0].Open || !opened.Details[0].BodyVisible {
		t.Errorf("a click on the message's first line did not open it: %+v", opened.Details)
	}
}

// openInChromium opens the page at path in a headless Chromium of its
// own (a fresh profile, no network services) and waits until the
// element sel is visible; the browser stops with the test.
func openInChromium(t *testing.T, browser, path, sel string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()),
		// Chromium's own temporary files (its singleton socket directory,
		// org.chromium.Chromium.*, which it leaves when it is stopped) go
		// where the test removes them, not into the machine's /tmp.
		chromedp.Env("TMPDIR="+t.TempDir()),
		chromedp.WindowSize(1280, 1000))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(ctx)
	t.Cleanup(cancelTab)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path), chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("chromium (%s): %v", browser, err)
	}
	return ctx
}

// screenshot writes the whole page as a PNG to path.
func screenshot(ctx context.Context, t *testing.T, path string) {
	t.Helper()
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err == nil {
		err = os.WriteFile(path, shot, 0o644)
	}
	if err != nil {
		t.Error(err)
	}
}

// checkPageText: the summary lines, no script, no sentinel, no duration
// with more than one decimal.
func checkPageText(t *testing.T, facts pageFacts, r scenarios.Results) {
	t.Helper()
	if facts.Scripts != 0 {
		t.Errorf("the report has %d script elements", facts.Scripts)
	}
	var want []string
	for _, s := range Summaries(r) {
		want = append(want, s.Line())
	}
	var got []string
	for _, s := range facts.Summary {
		got = append(got, s.Text)
	}
	if !slices.Equal(got, want) {
		t.Errorf("summary lines %q, want %q", got, want)
	}
	if len(facts.Summary) < 2 || facts.Summary[0].Bad == facts.Summary[1].Bad && Summaries(r)[0].AllAsExpected() != Summaries(r)[1].AllAsExpected() {
		t.Errorf("summary lines not marked by outcome: %+v", facts.Summary)
	}
	for _, bad := range []*regexp.Regexp{regexp.MustCompile(`-1\s?ms`), regexp.MustCompile(`\b\d+\.\d{2,}\s?s\b`), regexp.MustCompile(`\b\d+ms\b`)} {
		if m := bad.FindString(facts.Text); m != "" {
			t.Errorf("the page shows %q (%s)", m, bad)
		}
	}
}

// checkMatrix: every state is in the matrix, each with its glyph, a
// background and glyph colour of its own, and a key figure.
func checkMatrix(t *testing.T, facts pageFacts) {
	t.Helper()
	bg, fg := map[string]string{}, map[string]string{}
	for _, c := range facts.Cells {
		if c.Glyph != Glyph(c.State) {
			t.Errorf("%s cell shows glyph %q, want %q", c.State, c.Glyph, Glyph(c.State))
		}
		if c.Figure == "" {
			t.Errorf("%s cell has no key figure", c.State)
		}
		if prev, ok := bg[c.State]; ok && prev != c.Background {
			t.Errorf("%s cells in two colours: %s, %s", c.State, prev, c.Background)
		}
		bg[c.State], fg[c.State] = c.Background, c.GlyphColor
	}
	for _, s := range States {
		if _, ok := bg[s]; !ok {
			t.Errorf("no %s cell in the matrix", s)
		}
	}
	for _, colours := range []map[string]string{bg, fg} {
		seen := map[string]string{}
		for s, c := range colours {
			if other, ok := seen[c]; ok || c == "" || c == "rgba(0, 0, 0, 0)" {
				t.Errorf("states %s and %s share the colour %q", s, other, c)
			}
			seen[c] = s
		}
	}
}

// checkMessagesAndAbsent: long messages are collapsed to a visible first
// line; a latency that did not happen shows Absent with its reason.
func checkMessagesAndAbsent(t *testing.T, facts pageFacts) {
	t.Helper()
	if len(facts.Details) == 0 {
		t.Fatal("no long message is collapsed")
	}
	for _, d := range facts.Details {
		if d.Open || d.BodyVisible || d.SummaryH <= 0 || !strings.HasSuffix(d.Summary, "…") || d.BodyFullLen <= len(d.Summary) {
			t.Errorf("message not collapsed to its first line: %+v", d)
		}
	}
	if len(facts.Absent) == 0 {
		t.Error("no latency shows as absent, though the results have reboots without one")
	}
	for _, a := range facts.Absent {
		if a.Text != Absent || a.Title == "" {
			t.Errorf("absent figure %q with reason %q", a.Text, a.Title)
		}
	}
}

// calibrationFacts is what TestCalibrationInChromium reads from the page.
type calibrationFacts struct {
	Title    string `json:"title"`
	Heading  string `json:"heading"`
	Headline struct {
		Text string `json:"text"`
		Bad  bool   `json:"bad"`
	} `json:"headline"`
	Figures []string `json:"figures"`
	Lines   []struct {
		Text string `json:"text"`
		Bad  bool   `json:"bad"`
	} `json:"lines"`
	Columns []string `json:"columns"`
	Cells   []struct {
		Row        string   `json:"row"`
		Class      string   `json:"class"`
		Background string   `json:"background"`
		Links      []string `json:"links"`
		Glyphs     []string `json:"glyphs"`
		Classes    []string `json:"classes"`
		Colors     []string `json:"colors"`
		Targets    []bool   `json:"targets"`
	} `json:"cells"`
	NotRun  int    `json:"notRun"`
	RunView bool   `json:"runView"`
	Top     string `json:"top"`
	Scripts int    `json:"scripts"`
}

const calibrationJS = `(() => {
  const q = (s, el) => [...(el || document).querySelectorAll(s)];
  const h = document.querySelector('#calibration-headline');
  const latency = document.querySelector('h2');
  return {
    title: document.title,
    heading: document.querySelector('h1').innerText,
    headline: {text: h.innerText, bad: h.classList.contains('bad')},
    figures: q('#calibration-figures td').map(td => td.innerText),
    lines: q('#variants li').map(li => ({text: li.innerText, bad: li.classList.contains('bad')})),
    columns: q('#calibration-matrix tr:first-child th').slice(1).map(th => th.innerText),
    cells: q('#calibration-matrix td.cal').map(td => ({
      row: td.parentElement.firstElementChild.innerText,
      class: td.classList[1], background: getComputedStyle(td).backgroundColor,
      links: q('a', td).map(a => a.getAttribute('href')), glyphs: q('a', td).map(a => a.innerText),
      classes: q('a', td).map(a => a.className), colors: q('a', td).map(a => getComputedStyle(a).color),
      targets: q('a', td).map(a => !!document.getElementById(a.getAttribute('href').slice(1)))})),
    notRun: q('#calibration-matrix td.notrun').length,
    runView: !!document.querySelector('#summary, #matrix'),
    top: [...document.body.children].slice(0, [...document.body.children].indexOf(latency)).map(e => e.innerText).join('\n'),
    scripts: document.scripts.length,
  };
})()`

// TestCalibrationInChromium renders a calibration's index.html in
// headless Chromium and checks what a person sees first: the
// calibration, not the run. Its headline and figures are the
// calibration's, a line per variant marks the ones that fell short, and
// the matrix has a cell per variant and scenario that ran, each in the
// colour of its outcome, with a glyph that links to a case on the page;
// the run's counts, summary lines and conformance matrix are not there.
func TestCalibrationInChromium(t *testing.T) {
	browser := findChromium(t)
	dir := t.TempDir()
	r := calibrationRun()
	c := Calibrate(r, calibrationVariants())
	if err := WriteCalibration(dir, r, c, time.Date(2026, 12, 6, 1, 2, 3, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	ctx := openInChromium(t, browser, filepath.Join(dir, HTMLFile), "#calibration-matrix")
	facts, err := chromedp.Run(ctx, chromedp.Evaluate[calibrationFacts](calibrationJS))
	if err != nil {
		t.Fatal(err)
	}
	if d := os.Getenv(envScreenshotDir); d != "" {
		screenshot(ctx, t, filepath.Join(d, "calibration.png"))
	}
	if facts.Title != "bootproof calibration" || facts.Heading != "bootproof calibration" || facts.Scripts != 0 {
		t.Errorf("title %q, heading %q, %d scripts", facts.Title, facts.Heading, facts.Scripts)
	}
	if !strings.Contains(facts.Headline.Text, CalibrationHeadline(c)) || facts.Headline.Bad == c.OK() {
		t.Errorf("headline %+v, want %q marked bad=%v", facts.Headline, CalibrationHeadline(c), !c.OK())
	}
	wantFigures := []string{c.VariantsCaught.String(), c.VariantsPassed.String(), c.Sensitivity.String(), c.Specificity.String()}
	if !slices.Equal(facts.Figures, wantFigures) {
		t.Errorf("figures %q, want %q", facts.Figures, wantFigures)
	}
	if len(facts.Lines) != len(c.Rows) {
		t.Fatalf("%d variant lines, want %d", len(facts.Lines), len(c.Rows))
	}
	for i, row := range c.Rows {
		if l := facts.Lines[i]; l.Text != VariantLine(row) || l.Bad == row.Full() {
			t.Errorf("variant line %+v, want %q marked bad=%v", l, VariantLine(row), !row.Full())
		}
	}
	if facts.RunView || regexp.MustCompile(`\d+ passed, \d+ failed`).MatchString(facts.Top) {
		t.Errorf("the calibration's page opens with the run's summary (summary or matrix shown: %v):\n%s", facts.RunView, facts.Top)
	}
	checkCalibrationCells(t, facts, c)
}

// checkCalibrationCells: one cell per variant x scenario that ran (the
// others "not run"), each run a glyph of its outcome linking to its
// case, and a colour per outcome, none shared.
func checkCalibrationCells(t *testing.T, facts calibrationFacts, c CalibrationResult) {
	t.Helper()
	runs, pairs := 0, map[string]bool{}
	for _, r := range c.Rows {
		for _, cell := range r.Cells {
			runs++
			pairs[r.Variant+"/"+cell.Scenario] = true
		}
	}
	scen := map[string]bool{}
	for _, r := range c.Rows {
		for _, cell := range r.Cells {
			scen[cell.Scenario] = true
		}
	}
	if len(facts.Cells) != len(pairs) || facts.NotRun != len(scen)*len(c.Rows)-len(pairs) {
		t.Errorf("%d cells and %d not run, want %d and %d", len(facts.Cells), facts.NotRun, len(pairs), len(scen)*len(c.Rows)-len(pairs))
	}
	bg, fg := map[string]string{}, map[string]string{}
	links := 0
	for _, cell := range facts.Cells {
		for i, href := range cell.Links {
			links++
			if !cell.Targets[i] {
				t.Errorf("row %s: link %s goes nowhere on the page", cell.Row, href)
			}
			class := cell.Classes[i]
			k := slices.IndexFunc(cellOutcomes, func(o string) bool { return CellClass(o) == class })
			if k < 0 || cell.Glyphs[i] != CellGlyph(cellOutcomes[k]) {
				t.Errorf("row %s: a run of class %q shows %q", cell.Row, class, cell.Glyphs)
			}
		}
		if prev, ok := bg[cell.Class]; ok && prev != cell.Background {
			t.Errorf("%s cells in two colours: %s, %s", cell.Class, prev, cell.Background)
		}
		bg[cell.Class] = cell.Background
		if len(cell.Links) == 1 {
			fg[cell.Classes[0]] = cell.Colors[0]
		}
	}
	if links != runs {
		t.Errorf("%d links in the matrix, want one per run (%d)", links, runs)
	}
	for _, o := range []string{CellCaught, CellMissed, CellNoVerdict, CellExtraCatch, CellNotListed, CellFailed} {
		if _, ok := bg[CellClass(o)]; !ok {
			t.Errorf("no %s cell in the matrix", o)
		}
	}
	// Caught and passed share a look (the truth met), and so do missed
	// and failed (the truth not met); every other outcome has a
	// background of its own.
	seen := map[string]string{}
	for class, colour := range bg {
		switch class {
		case CellClass(CellPassed):
			class = CellClass(CellCaught)
		case CellClass(CellFailed):
			class = CellClass(CellMissed)
		}
		if other, ok := seen[colour]; (ok && other != class) || colour == "rgba(0, 0, 0, 0)" {
			t.Errorf("cells %s and %s share the colour %q", class, other, colour)
		}
		seen[colour] = class
	}
	if fg[CellClass(CellCaught)] == fg[CellClass(CellMissed)] {
		t.Errorf("caught and missed glyphs share the colour %q", fg[CellClass(CellCaught)])
	}
}

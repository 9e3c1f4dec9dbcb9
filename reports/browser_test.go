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
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()),
		// Chromium's own temporary files (its singleton socket directory,
		// org.chromium.Chromium.*, which it leaves when it is stopped) go
		// where the test removes them, not into the machine's /tmp.
		chromedp.Env("TMPDIR="+t.TempDir()),
		chromedp.WindowSize(1280, 1000))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(ctx)
	defer cancelTab()

	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+filepath.Join(dir, HTMLFile)), chromedp.WaitVisible(chromedp.CSS("#matrix"))); err != nil {
		t.Fatalf("chromium (%s): %v", browser, err)
	}
	facts, err := chromedp.Run(ctx, chromedp.Evaluate[pageFacts](factsJS))
	if err != nil {
		t.Fatal(err)
	}
	if d := os.Getenv(envScreenshotDir); d != "" {
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err == nil {
			err = os.WriteFile(filepath.Join(d, "report.png"), shot, 0o644)
		}
		if err != nil {
			t.Error(err)
		}
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

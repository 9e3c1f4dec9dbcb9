package reports

import (
	"encoding/xml"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bootproof/bootproof/scenarios"
)

// JUnit XML as Jenkins, Prow and the common GitHub Actions reporters read
// it (the Ant/Jenkins junit-10 shape). Encoded with encoding/xml.

// JUnitTestSuites is the document root.
type JUnitTestSuites struct {
	XMLName  xml.Name         `xml:"testsuites"`
	Name     string           `xml:"name,attr,omitempty"`
	Tests    int              `xml:"tests,attr"`
	Failures int              `xml:"failures,attr"`
	Errors   int              `xml:"errors,attr"`
	Skipped  int              `xml:"skipped,attr"`
	Time     string           `xml:"time,attr"`
	Suites   []JUnitTestSuite `xml:"testsuite"`
}

// JUnitTestSuite groups the cases of one cluster and node backend.
type JUnitTestSuite struct {
	Name      string `xml:"name,attr"`
	Tests     int    `xml:"tests,attr"`
	Failures  int    `xml:"failures,attr"`
	Errors    int    `xml:"errors,attr"`
	Skipped   int    `xml:"skipped,attr"`
	Time      string `xml:"time,attr"`
	Timestamp string `xml:"timestamp,attr"`
	Hostname  string `xml:"hostname,attr"`
	// Properties carry the run's environment (Results.Environment).
	Properties *JUnitProperties `xml:"properties,omitempty"`
	Cases      []JUnitTestCase  `xml:"testcase"`
}

// JUnitProperties is a suite's <properties>.
type JUnitProperties struct {
	Property []JUnitProperty `xml:"property"`
}

// JUnitProperty is one name/value pair.
type JUnitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// JUnitTestCase is one scenario x subject.
type JUnitTestCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *JUnitMessage `xml:"skipped,omitempty"`
	Error     *JUnitMessage `xml:"error,omitempty"`
	Failure   *JUnitMessage `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// JUnitMessage is a failure, error or skip.
type JUnitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

func seconds(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }

// traceTail is how many trace events a testcase's system-out carries.
const traceTail = 40

// BuildJUnit turns results into JUnit suites: one suite per cluster and
// node backend, one testcase per case.
func BuildJUnit(name string, r scenarios.Results, generated time.Time) JUnitTestSuites {
	host, _ := os.Hostname()
	out := JUnitTestSuites{Name: name}
	index := map[string]int{}
	var total int64
	for _, c := range r.Cases {
		key := fmt.Sprintf("bootproof.%s.%s", c.Cluster, c.Nodes)
		i, ok := index[key]
		if !ok {
			i = len(out.Suites)
			index[key] = i
			out.Suites = append(out.Suites, JUnitTestSuite{Name: key, Timestamp: generated.UTC().Format("2006-01-02T15:04:05"), Hostname: host,
				Properties: junitProperties(r.Environment)})
		}
		s := &out.Suites[i]
		tc := JUnitTestCase{Name: CaseName(c), Classname: key, Time: seconds(c.DurationMS), SystemOut: caseOutput(c)}
		detail := assertionText(c, false)
		switch c.Verdict {
		case scenarios.Fail:
			tc.Failure = &JUnitMessage{Message: c.Message, Type: "verdict", Body: detail}
			s.Failures++
		case scenarios.Error:
			tc.Error = &JUnitMessage{Message: c.Message, Type: "invalid-run", Body: detail}
			s.Errors++
		case scenarios.Skipped:
			tc.Skipped = &JUnitMessage{Message: c.Message}
			s.Skipped++
		}
		s.Tests++
		s.Cases = append(s.Cases, tc)
		total += c.DurationMS
	}
	var suiteTotal int64
	for i := range out.Suites {
		var ms int64
		for _, c := range r.Cases {
			if fmt.Sprintf("bootproof.%s.%s", c.Cluster, c.Nodes) == out.Suites[i].Name {
				ms += c.DurationMS
			}
		}
		out.Suites[i].Time = seconds(ms)
		suiteTotal += ms
		out.Tests += out.Suites[i].Tests
		out.Failures += out.Suites[i].Failures
		out.Errors += out.Suites[i].Errors
		out.Skipped += out.Suites[i].Skipped
	}
	out.Time = seconds(total)
	return out
}

// assertionText lists the case's assertions, one a line; withDetails,
// a failed assertion's every piece of evidence follows it, one a line
// (its message names only the first few).
func assertionText(c scenarios.CaseResult, withDetails bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "expected %s, observed %s\n", c.Expected, c.Observed)
	for _, a := range c.Assertions {
		mark := "ok  "
		if !a.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "%s %s: %s\n", mark, a.Name, a.Message)
		if a.NotJudged != "" {
			fmt.Fprintf(&b, "     %s: %s\n", a.Name, a.NotJudged)
		}
		if withDetails && len(a.Details) > 0 {
			fmt.Fprintf(&b, "     %s, every piece of evidence (%d):\n", a.Name, len(a.Details))
			for _, d := range a.Details {
				fmt.Fprintf(&b, "       node %s: %s\n", d.Node, d.Evidence)
			}
		}
	}
	return b.String()
}

func caseOutput(c scenarios.CaseResult) string {
	var b strings.Builder
	b.WriteString(assertionText(c, true))
	if c.ReloadBound != nil {
		fmt.Fprintf(&b, "reload service level: %s\n", c.ReloadBound.Format(FormatDuration))
	}
	for _, m := range c.Reboots {
		fmt.Fprintf(&b, "reboot %s: boot %s -> %s, downtime %dms, NotReady seen %v, detection %dms, reload %dms\n",
			m.Node, short(m.OldBootID), short(m.NewBootID), m.DowntimeMS, m.NotReadySeen, m.DetectionLatencyMS, m.ReloadLatencyMS)
	}
	ev := c.Trace
	if len(ev) > traceTail {
		fmt.Fprintf(&b, "... %d earlier trace events in trace.json\n", len(ev)-traceTail)
		ev = ev[len(ev)-traceTail:]
	}
	for _, e := range ev {
		fmt.Fprintf(&b, "%8.3fs %-9s %s %s\n", float64(e.TMS)/1000, e.Kind, e.Node, strings.TrimSpace(strings.Join([]string{e.Ready, short(e.BootID), e.Module, e.Pod, e.Detail}, " ")))
	}
	return b.String()
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// WriteJUnit writes results as JUnit XML.
func WriteJUnit(path, name string, r scenarios.Results, generated time.Time) error {
	data, err := xml.MarshalIndent(BuildJUnit(name, r, generated), "", "  ")
	if err != nil {
		return fmt.Errorf("encode JUnit: %w", err)
	}
	data = append([]byte(xml.Header), append(data, '\n')...)
	return writeFile(path, data, 0o644)
}

func junitProperties(env map[string]string) *JUnitProperties {
	if len(env) == 0 {
		return nil
	}
	p := &JUnitProperties{}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		p.Property = append(p.Property, JUnitProperty{Name: k, Value: env[k]})
	}
	return p
}

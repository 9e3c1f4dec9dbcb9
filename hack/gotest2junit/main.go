// Command gotest2junit turns 'go test -json' output (stdin) into JUnit XML
// (stdout) with reports' JUnit types, and echoes the tests' output to
// stderr. It exits 1 when a test failed. 'make e2e-libvirt' uses it to
// write reports/junit-libvirt.xml.
package main

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/bootproof/bootproof/reports"
)

type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

func main() { os.Exit(run()) }

func run() int {
	suites := map[string]*reports.JUnitTestSuite{}
	var order []string
	out := map[string]*strings.Builder{}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	failed := false
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			fmt.Fprintln(os.Stderr, sc.Text())
			continue
		}
		if e.Output != "" {
			fmt.Fprint(os.Stderr, e.Output)
		}
		if e.Test == "" || strings.Contains(e.Test, "/") {
			if e.Action == "fail" {
				failed = true
			}
			continue
		}
		key := e.Package + "." + e.Test
		if out[key] == nil {
			out[key] = &strings.Builder{}
		}
		out[key].WriteString(e.Output)
		s := suites[e.Package]
		if s == nil {
			s = &reports.JUnitTestSuite{Name: e.Package}
			suites[e.Package] = s
			order = append(order, e.Package)
		}
		tc := reports.JUnitTestCase{Name: e.Test, Classname: e.Package, Time: fmt.Sprintf("%.3f", e.Elapsed), SystemOut: out[key].String()}
		switch e.Action {
		case "pass":
		case "fail":
			tc.Failure = &reports.JUnitMessage{Message: "test failed", Body: tc.SystemOut}
			s.Failures++
			failed = true
		case "skip":
			tc.Skipped = &reports.JUnitMessage{Message: lastLine(tc.SystemOut)}
			s.Skipped++
		default:
			continue
		}
		s.Tests++
		s.Cases = append(s.Cases, tc)
	}
	doc := reports.JUnitTestSuites{Name: "go test"}
	var total float64
	for _, p := range order {
		s := suites[p]
		var secs float64
		for _, c := range s.Cases {
			var v float64
			fmt.Sscanf(c.Time, "%f", &v)
			secs += v
		}
		total += secs
		s.Time = fmt.Sprintf("%.3f", secs)
		s.Timestamp = time.Now().UTC().Format("2006-01-02T15:04:05")
		s.Hostname, _ = os.Hostname()
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Skipped += s.Skipped
		doc.Suites = append(doc.Suites, *s)
	}
	doc.Time = fmt.Sprintf("%.3f", total)
	data, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotest2junit:", err)
		return 2
	}
	fmt.Print(xml.Header + string(data) + "\n")
	if failed {
		return 1
	}
	return 0
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// Package reports writes the results of scenario runs: JUnit XML, a JSON
// trace, an HTML report with SVG timelines and a Markdown summary.
package reports

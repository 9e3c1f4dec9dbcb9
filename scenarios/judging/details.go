package judging

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Detail is one piece of evidence behind an assertion, about one node:
// a module not reloaded in its boot, a load made twice, a status claim
// ahead of the kernel, a status that disagrees with the kernel.
// results.json keeps every one (AssertionResult.Details); the
// assertion's message names how many nodes and only the first
// DetailsShown (Summarize), so that a reboot storm's failure stays
// readable.
type Detail struct {
	// Node is the node the evidence is about.
	Node string `json:"node"`
	// Evidence is what was seen there, without the node's name.
	Evidence string `json:"evidence"`
}

// DetailsShown is how many details an assertion's message names.
const DetailsShown = 3

// SortDetails orders details by node, a number inside a node's name
// compared as a number (node-2 before node-10), then by evidence.
func SortDetails(ds []Detail) {
	slices.SortStableFunc(ds, func(a, b Detail) int {
		return cmp.Or(CompareNames(a.Node, b.Node), strings.Compare(a.Evidence, b.Evidence))
	})
}

// CompareNames orders names as people count them: equal text compared
// as text, runs of digits compared as numbers.
func CompareNames(a, b string) int {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), strings.Compare(na, nb)); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// digitRun is the length of the run of ASCII digits s starts with.
func digitRun(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// Summarize renders what went wrong and its details (sorted, see
// SortDetails) for a message: on one node, "what on node n0: e1; e2";
// on several, "what on 50 nodes: node n0: e1; node n1: e2; node n2: e3";
// never more than DetailsShown details, then "and 47 more, every one in
// results.json". ds is sorted in place.
func Summarize(what string, ds []Detail) string {
	SortDetails(ds)
	var nodes []string
	for _, d := range ds {
		if !slices.Contains(nodes, d.Node) {
			nodes = append(nodes, d.Node)
		}
	}
	var b strings.Builder
	b.WriteString(what)
	one := len(nodes) == 1
	switch {
	case len(ds) == 0:
		return what
	case one:
		fmt.Fprintf(&b, " on node %s: ", nodes[0])
	default:
		fmt.Fprintf(&b, " on %d nodes: ", len(nodes))
	}
	for i, d := range ds[:min(len(ds), DetailsShown)] {
		if i > 0 {
			b.WriteString("; ")
		}
		if !one {
			fmt.Fprintf(&b, "node %s: ", d.Node)
		}
		b.WriteString(d.Evidence)
	}
	if rest := len(ds) - DetailsShown; rest > 0 {
		fmt.Fprintf(&b, "; and %d more, every one in results.json", rest)
	}
	return b.String()
}

package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bootproof/bootproof/scenarios"
)

// Outcome is what was observed of one subject in one scenario: pass,
// fail with the assertions that failed, error, or skipped.
type Outcome struct {
	Observed string
	Failed   []string
}

func (o Outcome) String() string {
	if o.Observed == "fail" && len(o.Failed) > 0 {
		return "fail:" + strings.Join(o.Failed, ",")
	}
	return o.Observed
}

// OutcomeOf is c's observed outcome.
func OutcomeOf(c scenarios.CaseResult) Outcome {
	o := Outcome{Observed: c.Observed}
	for _, a := range c.Assertions {
		if !a.OK {
			o.Failed = append(o.Failed, a.Name)
		}
	}
	slices.Sort(o.Failed)
	return o
}

// Difference is a scenario in which two subjects were observed to do
// different things.
type Difference struct {
	Scenario string
	A, B     Outcome
}

// CompareSubjects compares, scenario by scenario, what was observed of
// subjects a and b in r (the verdicts' inputs, not the verdicts: two
// subjects with different expectations can pass alike and still have
// behaved differently). It returns the scenarios both ran and where they
// differ; a scenario only one of them ran is a difference too.
func CompareSubjects(r scenarios.Results, a, b string) (compared int, diffs []Difference, err error) {
	outcomes := map[string]map[string]Outcome{a: {}, b: {}}
	for _, c := range r.Cases {
		if m, ok := outcomes[c.Subject]; ok {
			m[c.Scenario] = OutcomeOf(c)
		}
	}
	for _, s := range []string{a, b} {
		if len(outcomes[s]) == 0 {
			return 0, nil, fmt.Errorf("subject %s has no cases in the results", s)
		}
	}
	var names []string
	for n := range outcomes[a] {
		names = append(names, n)
	}
	for n := range outcomes[b] {
		if _, ok := outcomes[a][n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		oa, okA := outcomes[a][n]
		ob, okB := outcomes[b][n]
		if !okA {
			oa = Outcome{Observed: "not run"}
		}
		if !okB {
			ob = Outcome{Observed: "not run"}
		}
		if okA && okB {
			compared++
		}
		if oa.String() != ob.String() {
			diffs = append(diffs, Difference{Scenario: n, A: oa, B: ob})
		}
	}
	return compared, diffs, nil
}

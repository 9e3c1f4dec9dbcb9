package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Expectation is the outcome a subject should get in a scenario: pass,
// or fail through one of the named assertions (through any assertion
// when none are named).
type Expectation struct {
	// Outcome is Pass or Fail.
	Outcome string
	// Assertions, with Fail, are the assertions the subject may fail
	// through; failing through another one is an error (the case failed
	// for the wrong reason). Empty: any assertion.
	Assertions []string
	// Source says where the expectation was stated, for messages.
	Source string
}

// Judged lists the assertions a subject can fail through: a violated
// precondition makes the run invalid (an error), never a failure.
var Judged = []string{AssertInitialLoad, AssertWorker, AssertReload, AssertNoExtraWork, AssertConsistency, AssertStatusAfterLoad}

// expectationSyntax is the accepted form, for error messages.
var expectationSyntax = "pass, fail, or fail:<assertion>[,<assertion>...] with assertions " + strings.Join(Judged, ", ")

// ParseExpectation reads "pass", "fail" or "fail:reload,no-extra-work".
func ParseExpectation(s string) (Expectation, error) {
	s = strings.TrimSpace(s)
	outcome, list, hasList := strings.Cut(s, ":")
	switch {
	case outcome == Pass && !hasList:
		return Expectation{Outcome: Pass}, nil
	case outcome == Fail && !hasList:
		return Expectation{Outcome: Fail}, nil
	case outcome == Fail:
		e := Expectation{Outcome: Fail}
		for _, a := range strings.Split(list, ",") {
			a = strings.TrimSpace(a)
			if !slices.Contains(Judged, a) {
				return Expectation{}, fmt.Errorf("%q: unknown assertion %q: accepted: %s", s, a, expectationSyntax)
			}
			if slices.Contains(e.Assertions, a) {
				return Expectation{}, fmt.Errorf("%q: assertion %s listed twice", s, a)
			}
			e.Assertions = append(e.Assertions, a)
		}
		return e, nil
	}
	return Expectation{}, fmt.Errorf("%q: accepted: %s", s, expectationSyntax)
}

// String is the form ParseExpectation reads.
func (e Expectation) String() string {
	if e.Outcome == Fail && len(e.Assertions) > 0 {
		return Fail + ":" + strings.Join(e.Assertions, ",")
	}
	return e.Outcome
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (e *Expectation) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &FieldError{Line: n.Line, column: n.Column, Msg: "want " + expectationSyntax}
	}
	v, err := ParseExpectation(n.Value)
	if err != nil {
		return &FieldError{Line: n.Line, column: n.Column, Msg: err.Error()}
	}
	*e = v
	return nil
}

// ExpectationFor returns what subj should get in s: the subject's own
// statement when it is an Expecter, else the scenario's expect entry for
// its name. ok is false when neither states one.
func ExpectationFor(s *Scenario, subj Subject) (Expectation, bool) {
	if x, ok := subj.(Expecter); ok {
		return x.Expectation(s)
	}
	e, ok := s.Expect[subj.Name()]
	if ok && e.Source == "" {
		e.Source = "scenario " + s.Name
	}
	return e, ok
}

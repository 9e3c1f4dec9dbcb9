package scenarios

import (
	"github.com/bootproof/bootproof/scenarios/fileformat"
	"github.com/bootproof/bootproof/scenarios/judging"
	"go.yaml.in/yaml/v3"
)

// Expectation is the outcome a subject should get in a scenario
// (judging.Expectation), as scenario and subject files state it.
type Expectation judging.Expectation

// ParseExpectation reads "pass", "fail" or "fail:reload,no-extra-work"
// (judging.ParseExpectation).
func ParseExpectation(s string) (Expectation, error) {
	e, err := judging.ParseExpectation(s)
	return Expectation(e), err
}

// String is the form ParseExpectation reads.
func (e Expectation) String() string { return judging.Expectation(e).String() }

// UnmarshalYAML implements yaml.Unmarshaler.
func (e *Expectation) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &fileformat.FieldError{Line: n.Line, Column: n.Column, Msg: "want " + judging.ExpectationSyntax}
	}
	v, err := ParseExpectation(n.Value)
	if err != nil {
		return &fileformat.FieldError{Line: n.Line, Column: n.Column, Msg: err.Error()}
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

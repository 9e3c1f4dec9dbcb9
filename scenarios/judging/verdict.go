package judging

import (
	"fmt"
	"slices"
	"strings"
)

// Fault is why a case cannot be judged on its assertions: an
// infrastructure, cluster or subject fault, an invalid run or an
// interruption (Verdict Error), or a case that could not run (Verdict
// Skipped). The engine classifies what went wrong; Decide reports it.
type Fault struct {
	// Verdict is Error or Skipped.
	Verdict string
	// Message says what happened, for people.
	Message string
}

// Case is everything a verdict is decided on.
type Case struct {
	// Scenario and Subject name the case, for messages.
	Scenario, Subject string
	// Expected is what the subject should get.
	Expected Expectation
	// Results are the case's assertions, in the order judged.
	Results []AssertionResult
	// Fault, when set, ends the case without a judgement.
	Fault *Fault
}

// Decision is a case's outcome: Observed is what the subject did (pass,
// fail; error or skipped when it was not judged), Verdict whether that
// is what was expected (pass: as expected; fail: not; error: the case
// says nothing), and Message why.
type Decision struct {
	Observed, Verdict, Message string
}

// Decide compares what was observed with what was expected. It is the
// only judgement that reads the expectation: everything before it
// observes the same whichever verdict is expected.
func Decide(c Case) Decision {
	if c.Fault != nil {
		return Decision{Observed: c.Fault.Verdict, Verdict: c.Fault.Verdict, Message: c.Fault.Message}
	}
	observed, msg := Pass, ""
	var through []string
	for _, a := range c.Results {
		if !a.OK && a.Name == AssertPrecondition {
			return Decision{Observed: Error, Verdict: Error, Message: "invalid run: " + a.Message}
		}
		if !a.OK {
			if observed == Pass {
				observed, msg = Fail, a.Name+": "+a.Message
			}
			if !slices.Contains(through, a.Name) {
				through = append(through, a.Name)
			}
		}
	}
	exp := c.Expected
	switch {
	case observed == Fail && exp.Outcome == Fail:
		for _, a := range c.Results {
			if !a.OK && slices.Contains(Prerequisites, a.Name) && !slices.Contains(exp.Assertions, a.Name) {
				return Decision{observed, Error, fmt.Sprintf("failed for the wrong reason: the case never reached the state its expectation (%s, %s) is about: %s: %s",
					exp, exp.Source, a.Name, a.Message)}
			}
		}
		if len(exp.Assertions) > 0 && !slices.ContainsFunc(through, func(a string) bool { return slices.Contains(exp.Assertions, a) }) {
			return Decision{observed, Error, fmt.Sprintf("failed for the wrong reason: expected to fail through %s (%s), failed through %s (%s)",
				strings.Join(exp.Assertions, " or "), exp.Source, strings.Join(through, ", "), msg)}
		}
		return Decision{observed, Pass, "failed as expected (" + msg + ")"}
	case observed == exp.Outcome:
		return Decision{observed, Pass, msg}
	case exp.Outcome == Fail:
		return Decision{observed, Fail, fmt.Sprintf("the harness did not catch the bug: the %s subject was expected to fail %s (%s) but passed every assertion",
			c.Subject, c.Scenario, exp.Source)}
	}
	return Decision{observed, Fail, msg}
}

package judging_test

import (
	"fmt"

	"github.com/bootproof/bootproof/scenarios/judging"
)

// The verdict compares what was observed with what was expected: the
// legacy reconciler failing the reload of a fast reboot is the negative
// control doing its job.
func ExampleDecide() {
	exp, err := judging.ParseExpectation("fail:reload")
	if err != nil {
		panic(err)
	}
	d := judging.Decide(judging.Case{
		Scenario: "fast-reboot-0.5g", Subject: "legacy", Expected: exp,
		Results: []judging.AssertionResult{
			{Name: judging.AssertInitialLoad, OK: true},
			{Name: judging.AssertReload, Message: "module dummy not loaded in boot 36ff5a4b of node n0"},
		},
	})
	fmt.Println(d.Observed, d.Verdict)
	fmt.Println(d.Message)
	// Output:
	// fail pass
	// failed as expected (reload: module dummy not loaded in boot 36ff5a4b of node n0)
}

// A case that failed a prerequisite never reached the state its
// expectation is about: an error, not a caught bug.
func ExampleDecide_wrongReason() {
	d := judging.Decide(judging.Case{
		Scenario: "fast-reboot-0.5g", Subject: "legacy",
		Expected: judging.Expectation{Outcome: judging.Fail, Assertions: []string{judging.AssertReload}, Source: "scenario fast-reboot-0.5g"},
		Results:  []judging.AssertionResult{{Name: judging.AssertInitialLoad, Message: "module dummy never loaded"}},
	})
	fmt.Println(d.Verdict)
	fmt.Println(d.Message)
	// Output:
	// error
	// failed for the wrong reason: the case never reached the state its expectation (fail:reload, scenario fast-reboot-0.5g) is about: initial-load: module dummy never loaded
}

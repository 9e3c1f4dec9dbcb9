package judging

import (
	"fmt"
	"time"
)

// JudgeSubjectRuns is the subject-runs assertion, failed: the subject
// stopped by its own doing (its process exited by itself, its reconciler
// panicked, its manager returned, its container exited with a status of
// its own) at into the case, before any other judged assertion failed;
// stop says how, with the end of its log. An operator never stops on its
// own: that it did during a reboot is a defect of its own, not a fault of
// the harness or the cluster (a stop from outside, a signal or the OOM
// killer, is an error of the case; so is one after a cluster fault). The
// case's timeline ends there, so its other assertions are not judged.
func JudgeSubjectRuns(stop string, at time.Duration) AssertionResult {
	return AssertionResult{Name: AssertSubjectRuns,
		Message: fmt.Sprintf("at %.1fs into the case, %s", at.Seconds(), stop)}
}

package judging

import (
	"fmt"
	"time"
)

// JudgeWorkersFinish is the workers-finish assertion: active lists, by
// node, the subject's worker pods that had not ended (Succeeded, Failed
// or deleted) after the wait of timeout that followed the timeline. A
// worker that never ends is the subject's fault: a loader or unloader
// that cannot succeed (a module missing from the new kernel, a bad
// config) keeps restarting under restartPolicy OnFailure until the
// subject deletes or replaces it. The loads such a pod may still make are
// not counted by no-extra-work.
func JudgeWorkersFinish(active []Detail, timeout time.Duration) AssertionResult {
	if len(active) == 0 {
		return AssertionResult{Name: AssertWorkersFinish, OK: true, Message: "every worker pod ended"}
	}
	what := fmt.Sprintf("%d worker pod(s) still not ended %s after the timeline", len(active), timeout)
	return AssertionResult{Name: AssertWorkersFinish, Details: active,
		Message: Summarize(what, active) + ": the subject left a worker that never finishes (one that cannot succeed keeps restarting until the subject deletes it)"}
}

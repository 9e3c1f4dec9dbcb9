package judging

import (
	"fmt"
	"strings"
	"time"
)

// JudgeWorkersFinish is the workers-finish assertion: active lists the
// subject's worker pods that had not ended (Succeeded, Failed or
// deleted) after the wait of timeout that followed the timeline. A
// worker that never ends is the subject's fault: a loader or unloader
// that cannot succeed (a module missing from the new kernel, a bad
// config) keeps restarting under restartPolicy OnFailure until the
// subject deletes or replaces it. The loads such a pod may still make are
// not counted by no-extra-work.
func JudgeWorkersFinish(active []string, timeout time.Duration) AssertionResult {
	if len(active) == 0 {
		return AssertionResult{Name: AssertWorkersFinish, OK: true, Message: "every worker pod ended"}
	}
	return AssertionResult{Name: AssertWorkersFinish, Message: fmt.Sprintf(
		"%d worker pod(s) still not ended %s after the timeline: %s; the subject left a worker that never finishes (one that cannot succeed keeps restarting until the subject deletes it)",
		len(active), timeout, strings.Join(active, ", "))}
}

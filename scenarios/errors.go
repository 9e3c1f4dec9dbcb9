package scenarios

import (
	"errors"
	"fmt"
	"time"
)

// skipError marks a case the backend or subject cannot run.
type skipError struct{ reason string }

func (e *skipError) Error() string { return e.reason }

// infraError marks a fault of the infrastructure (not of the subject).
type infraError struct{ err error }

func (e *infraError) Error() string { return e.err.Error() }
func (e *infraError) Unwrap() error { return e.err }

func infra(format string, args ...any) error { return &infraError{fmt.Errorf(format, args...)} }

// NotRunInterrupted starts the message of a case the run was interrupted
// in or before: an error, not a skip, so that no report of an
// interrupted run reads as acceptable.
const NotRunInterrupted = "not run: interrupted"

// interruptedError marks a case whose run was interrupted (SIGINT,
// SIGTERM): it is never judged.
type interruptedError struct{ err error }

func (e *interruptedError) Error() string { return NotRunInterrupted + ": " + e.err.Error() }

// subjectError marks a subject that stopped acting on its own during the
// case (its process exited, its manager failed) or could not be paused or
// resumed: the case cannot be judged.
type subjectError struct {
	err error
	// at is when the case first saw the stop (zero for a failed pause
	// or resume).
	at time.Time
}

// own reports whether the subject stopped by its own doing (OwnFault).
func (e *subjectError) own() bool {
	var of OwnFault
	return !e.at.IsZero() && errors.As(e.err, &of) && of.OwnFault()
}

func (e *subjectError) Error() string { return e.err.Error() }
func (e *subjectError) Unwrap() error { return e.err }

// isFault reports whether err is an infrastructure or subject fault, as
// opposed to a timeout a check turns into a failed assertion.
func isFault(err error) bool {
	var ie *infraError
	var se *subjectError
	return errors.As(err, &ie) || errors.As(err, &se)
}

// subjectErr returns a subjectError when the case's subject instance
// stopped acting on its own.
func (c *caseRun) subjectErr() error {
	h, ok := c.inst.(HealthReporter)
	if !ok {
		return nil
	}
	if err := h.Err(); err != nil {
		return &subjectError{err: fmt.Errorf("subject %s stopped during the case: %w", c.subj.Name(), err), at: time.Now()}
	}
	return nil
}

// errAborted stops a timeline after an assertion failed.
var errAborted = errors.New("timeline aborted after a failed assertion")

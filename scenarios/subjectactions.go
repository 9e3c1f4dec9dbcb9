package scenarios

import (
	"context"
	"fmt"
	"time"
)

// The actions on the subject: pause-subject, resume-subject and
// restart-subject.

// canPause skips a case whose subject the harness cannot stop and start.
func (c *caseRun) canPause(a Action) error {
	pc, ok := c.subj.(PauseChecker)
	if !ok {
		return &skipError{fmt.Sprintf("subject %s cannot be paused or restarted by the harness (%s)", c.subj.Name(), a.Kind)}
	}
	if err := pc.CanPause(); err != nil {
		return &skipError{fmt.Sprintf("subject %s cannot be paused or restarted by the harness (%s): %v", c.subj.Name(), a.Kind, err)}
	}
	return nil
}

// doSubject pauses, resumes or restarts the subject.
func (c *caseRun) doSubject(ctx context.Context, a Action) error {
	p, ok := c.inst.(Pauser)
	if !ok {
		return &skipError{fmt.Sprintf("subject %s cannot be paused", c.subj.Name())}
	}
	c.obs.Action("", a.Kind, string(a.Kind))
	switch a.Kind {
	case ActPauseSubject:
		return c.pause(ctx, p)
	case ActResumeSubject:
		return c.resume(ctx, p)
	}
	if err := c.pause(ctx, p); err != nil {
		return err
	}
	if !sleepCtx(ctx, a.Downtime.Resolve(c.grace)) {
		return ctx.Err()
	}
	return c.resume(ctx, p)
}

// pause stops the subject and notes when it was down; the subject's
// leader Lease is followed from then on, if it names one.
func (c *caseRun) pause(ctx context.Context, p Pauser) error {
	if err := p.Pause(ctx); err != nil {
		return c.wrapSubject("pause", err)
	}
	c.mu.Lock()
	c.pausedAt = time.Now()
	c.mu.Unlock()
	return c.followLeader(ctx)
}

// resume starts the subject again and notes when.
func (c *caseRun) resume(ctx context.Context, p Pauser) error {
	if err := p.Resume(ctx); err != nil {
		return c.wrapSubject("resume", err)
	}
	c.mu.Lock()
	c.resumedAt = time.Now()
	c.mu.Unlock()
	return nil
}

// wrapSubject makes a failed pause or resume of the subject a subject
// fault.
func (c *caseRun) wrapSubject(what string, err error) error {
	if err == nil {
		return nil
	}
	return &subjectError{err: fmt.Errorf("%s subject %s: %w", what, c.subj.Name(), err)}
}

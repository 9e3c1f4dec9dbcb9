package workflowcheck

import (
	"errors"
	"fmt"
	"slices"

	"github.com/rhysd/actionlint"
)

// evaluator evaluates one workflow on one event.
type evaluator struct {
	w      *Workflow
	ev     Event
	values map[string]any
	wfEnv  map[string]string
}

// ctx is a Context with the named contexts of base, and of extra.
func ctxOf(base, extra map[string]any, names ...string) *Context {
	c := &Context{Values: map[string]any{}}
	for _, n := range names {
		if v, ok := extra[n]; ok {
			c.Values[n] = v
		} else if v, ok := base[n]; ok {
			c.Values[n] = v
		}
	}
	return c
}

func (e *evaluator) ctx(names ...string) *Context { return ctxOf(e.values, nil, names...) }

// env evaluates an env: section over inherited variables.
func (e *evaluator) env(env *actionlint.Env, c *Context, inherited map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range inherited {
		out[k] = v
	}
	if env == nil {
		return out, nil
	}
	if env.Expression != nil {
		v, err := Interpolate(env.Expression.Value, c)
		if err != nil {
			return nil, err
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("env: %s is not an object", env.Expression.Value)
		}
		for k, x := range m {
			out[k] = ToString(x)
		}
		return out, nil
	}
	for _, v := range env.Vars {
		s, err := InterpolateString(v.Value.Value, c)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", v.Name.Value, err)
		}
		out[v.Name.Value] = s
	}
	return out, nil
}

func envObject(env map[string]string) map[string]any {
	m := map[string]any{}
	for k, v := range env {
		m[k] = v
	}
	return m
}

// jobContexts are the contexts of a job's keys other than if and steps.
var jobContexts = []string{"github", "needs", "strategy", "matrix", "vars", "inputs"}

func (e *evaluator) job(job *actionlint.Job, done map[string]*JobRun) (*JobRun, error) {
	jr := &JobRun{ID: job.ID.Value}
	if job.Strategy != nil && job.Strategy.Matrix != nil {
		return nil, errors.New("a matrix: not supported by workflowcheck yet")
	}
	if job.WorkflowCall != nil {
		return nil, errors.New("a reusable workflow: not supported by workflowcheck yet")
	}
	needs := map[string]any{}
	status := StatusSuccess
	for _, n := range job.Needs {
		d := done[n.Value]
		result := "success"
		if !d.Runs {
			// A job whose needs did not run runs only when its if calls
			// a status function: modelled as after a failure (so
			// always() and failure() let it run; success() does not).
			result, status = "skipped", StatusFailure
		}
		needs[n.Value] = map[string]any{"result": result, "outputs": map[string]any{}}
	}
	extra := map[string]any{"needs": needs, "strategy": map[string]any{"fail-fast": true, "job-index": 0.0, "job-total": 1.0, "max-parallel": 1.0},
		"matrix": map[string]any{}}
	cond := ""
	if job.If != nil {
		cond = job.If.Value
	}
	c := ctxOf(e.values, extra, "github", "needs", "vars", "inputs")
	c.Status = status
	runs, err := Condition(cond, c)
	if err != nil {
		return nil, err
	}
	jr.Runs = runs
	if !runs {
		return jr, nil
	}
	keys := ctxOf(e.values, extra, jobContexts...)
	if jr.RunsOn, err = runsOn(job.RunsOn, keys); err != nil {
		return nil, fmt.Errorf("runs-on: %w", err)
	}
	if jr.TimeoutMinutes, err = floatValue(job.TimeoutMinutes, keys); err != nil {
		return nil, fmt.Errorf("timeout-minutes: %w", err)
	}
	if cc := job.Concurrency; cc != nil {
		if jr.Concurrency, err = stringValue(cc.Group, keys); err != nil {
			return nil, fmt.Errorf("concurrency: %w", err)
		}
		if jr.CancelInProgress, err = boolValue(cc.CancelInProgress, keys); err != nil {
			return nil, fmt.Errorf("concurrency: %w", err)
		}
	}
	// A job's env sees no env context (GitHub's context availability).
	envCtx := ctxOf(e.values, extra, slices.Concat(jobContexts, []string{"secrets"})...)
	if jr.Env, err = e.env(job.Env, envCtx, nil); err != nil {
		return nil, err
	}
	jr.Steps, err = e.steps(job.Steps, extra, mergeEnv(e.wfEnv, jr.Env))
	return jr, err
}

func mergeEnv(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func runsOn(r *actionlint.Runner, c *Context) ([]string, error) {
	if r == nil {
		return nil, errors.New("missing")
	}
	var labels []string
	add := func(v any) {
		if a, ok := v.([]any); ok {
			for _, x := range a {
				labels = append(labels, ToString(x))
			}
			return
		}
		labels = append(labels, ToString(v))
	}
	if r.LabelsExpr != nil {
		v, err := Interpolate(r.LabelsExpr.Value, c)
		if err != nil {
			return nil, err
		}
		add(v)
	}
	for _, l := range r.Labels {
		v, err := Interpolate(l.Value, c)
		if err != nil {
			return nil, err
		}
		add(v)
	}
	if r.Group != nil {
		g, err := InterpolateString(r.Group.Value, c)
		if err != nil {
			return nil, err
		}
		labels = append(labels, "group:"+g)
	}
	return labels, nil
}

func floatValue(f *actionlint.Float, c *Context) (string, error) {
	switch {
	case f == nil:
		return "", nil
	case f.Expression != nil:
		return InterpolateString(f.Expression.Value, c)
	}
	return ToString(f.Value), nil
}

func boolValue(b *actionlint.Bool, c *Context) (string, error) {
	switch {
	case b == nil:
		return "", nil
	case b.Expression != nil:
		return InterpolateString(b.Expression.Value, c)
	}
	return ToString(b.Value), nil
}

func stringValue(s *actionlint.String, c *Context) (string, error) {
	if s == nil {
		return "", nil
	}
	return InterpolateString(s.Value, c)
}

// runnerContext is a Linux x64 runner's.
var runnerContext = map[string]any{"os": "Linux", "arch": "X64", "name": "runner", "temp": "/home/runner/work/_temp",
	"tool_cache": "/opt/hostedtoolcache", "debug": "", "environment": "github-hosted"}

// stepContexts are the contexts of a step's keys (if, env, with, run).
var stepContexts = []string{"github", "needs", "strategy", "matrix", "job", "runner", "env", "vars", "secrets", "steps", "inputs"}

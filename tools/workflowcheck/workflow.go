package workflowcheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/rhysd/actionlint"
	"go.yaml.in/yaml/v4"
)

// Workflow is one workflow file, parsed by actionlint.
type Workflow struct {
	// Root is the repository's root (local actions are found from it);
	// Path is the file, relative to Root.
	Root, Path string
	AST        *actionlint.Workflow
}

// LoadWorkflow parses the workflow at path (relative to root).
func LoadWorkflow(root, path string) (*Workflow, error) {
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	ast, errs := actionlint.Parse(data)
	if len(errs) > 0 {
		var all []error
		for _, e := range errs {
			all = append(all, fmt.Errorf("%s:%d:%d: %s", path, e.Line, e.Column, e.Message))
		}
		return nil, errors.Join(all...)
	}
	return &Workflow{Root: root, Path: path, AST: ast}, nil
}

// Events lists the events that start the workflow (on:), sorted.
func (w *Workflow) Events() []string {
	var names []string
	for _, e := range w.AST.On {
		names = append(names, e.EventName())
	}
	sort.Strings(names)
	return names
}

// DispatchInputs returns the workflow_dispatch inputs by name (nil when
// the workflow cannot be started by hand).
func (w *Workflow) DispatchInputs() map[string]*actionlint.DispatchInput {
	for _, e := range w.AST.On {
		if d, ok := e.(*actionlint.WorkflowDispatchEvent); ok {
			in := map[string]*actionlint.DispatchInput{}
			for _, i := range d.Inputs {
				in[i.Name.Value] = i
			}
			return in
		}
	}
	return nil
}

// Event is one start of a workflow: the event's name and, for
// workflow_dispatch, the inputs given (the others take their defaults).
// Push and schedule runs are on main; a pull request is from a branch
// into main.
type Event struct {
	Name   string
	Inputs map[string]string
}

func (e Event) String() string {
	if len(e.Inputs) == 0 {
		return e.Name
	}
	var kv []string
	for k, v := range e.Inputs {
		kv = append(kv, fmt.Sprintf("%s=%q", k, v))
	}
	sort.Strings(kv)
	return e.Name + " (" + strings.Join(kv, ", ") + ")"
}

// Run is what a workflow does on one event: its jobs, evaluated.
type Run struct {
	Event Event
	Jobs  []*JobRun
}

// Job returns the job with this ID, or nil.
func (r *Run) Job(id string) *JobRun {
	for _, j := range r.Jobs {
		if j.ID == id {
			return j
		}
	}
	return nil
}

// JobRun is a job on one event. The fields past Runs are evaluated only
// for a job that runs.
type JobRun struct {
	ID   string
	Runs bool
	// RunsOn is the runner's labels.
	RunsOn         []string
	TimeoutMinutes string
	// Concurrency is the job's concurrency group ("" without one).
	Concurrency, CancelInProgress string
	Env                           map[string]string
	Steps                         []*StepRun
}

// StepRun is a step of a job that runs (or of a local composite action).
type StepRun struct {
	// Key names the step: its id, else its name, else what it uses, else
	// "run: " and the first line of its script.
	Key       string
	Uses, Run string
	// OnSuccess: the step runs when every step before it succeeded;
	// OnFailure: it runs when a step before it failed. (Inside a
	// composite action the status functions see the action's own steps:
	// its steps are evaluated as after success.)
	OnSuccess, OnFailure bool
	Env, With            map[string]string
	// Steps are the steps of the local composite action the step uses,
	// with its inputs.
	Steps []*StepRun
}

// Evaluate says what the workflow does on ev.
func (w *Workflow) Evaluate(ev Event) (*Run, error) {
	if !slices.Contains(w.Events(), ev.Name) {
		return nil, fmt.Errorf("%s does not start on %s (on: %v)", w.Path, ev.Name, w.Events())
	}
	inputs, err := w.inputs(ev)
	if err != nil {
		return nil, err
	}
	e := &evaluator{w: w, ev: ev, values: map[string]any{
		"github":  githubContext(w, ev),
		"inputs":  inputs,
		"vars":    map[string]any{},
		"secrets": map[string]any{"GITHUB_TOKEN": "***"},
	}}
	wfEnv, err := e.env(w.AST.Env, e.ctx("github", "secrets", "inputs", "vars"), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: env: %w", w.Path, err)
	}
	e.wfEnv = wfEnv
	run := &Run{Event: ev}
	ids := make([]string, 0, len(w.AST.Jobs))
	for id := range w.AST.Jobs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	done := map[string]*JobRun{}
	// Jobs after the jobs they need.
	for len(done) < len(ids) {
		progress := false
		for _, id := range ids {
			job := w.AST.Jobs[id]
			if done[id] != nil || !allDone(job.Needs, done) {
				continue
			}
			jr, err := e.job(job, done)
			if err != nil {
				return nil, fmt.Errorf("%s: %s on %s: %w", w.Path, id, ev, err)
			}
			done[id] = jr
			run.Jobs = append(run.Jobs, jr)
			progress = true
		}
		if !progress {
			return nil, fmt.Errorf("%s: the jobs' needs form a cycle or name a missing job", w.Path)
		}
	}
	return run, nil
}

func allDone(needs []*actionlint.String, done map[string]*JobRun) bool {
	for _, n := range needs {
		if done[n.Value] == nil {
			return false
		}
	}
	return true
}

// inputs is the inputs context: on workflow_dispatch every input, given
// or its default, typed as GitHub types it; empty on other events.
func (w *Workflow) inputs(ev Event) (map[string]any, error) {
	out := map[string]any{}
	decl := w.DispatchInputs()
	for k := range ev.Inputs {
		if ev.Name != "workflow_dispatch" || decl[k] == nil {
			return nil, fmt.Errorf("%s: input %q is not a workflow_dispatch input", w.Path, k)
		}
	}
	if ev.Name != "workflow_dispatch" {
		return out, nil
	}
	for name, in := range decl {
		v, given := ev.Inputs[name]
		if !given && in.Default != nil {
			v = in.Default.Value
		}
		switch in.Type {
		case actionlint.WorkflowDispatchEventInputTypeBoolean:
			out[name] = v == "true"
		case actionlint.WorkflowDispatchEventInputTypeNumber:
			out[name] = ToNumber(v)
		default:
			out[name] = v
		}
	}
	return out, nil
}

// githubContext is the github context of a run on ev in
// bootproof/bootproof.
func githubContext(w *Workflow, ev Event) map[string]any {
	name := w.Path
	if w.AST.Name != nil {
		name = w.AST.Name.Value
	}
	g := map[string]any{
		"event_name": ev.Name, "repository": "bootproof/bootproof", "repository_owner": "bootproof",
		"workflow": name, "ref": "refs/heads/main", "ref_name": "main", "ref_type": "branch", "base_ref": "", "head_ref": "",
		"sha": strings.Repeat("0", 40), "actor": "octocat", "run_id": "1", "run_number": "1", "run_attempt": "1",
		"server_url": "https://github.com", "api_url": "https://api.github.com", "workspace": "/home/runner/work/bootproof/bootproof",
		"token": "***", "action_path": "", "event": map[string]any{},
	}
	switch ev.Name {
	case "pull_request":
		g["ref"], g["ref_name"], g["base_ref"], g["head_ref"] = "refs/pull/1/merge", "1/merge", "main", "a-branch"
		g["event"] = map[string]any{"number": 1.0, "pull_request": map[string]any{"number": 1.0,
			"base": map[string]any{"ref": "main"}, "head": map[string]any{"ref": "a-branch"}}}
	case "workflow_dispatch":
		in := map[string]any{}
		for name, d := range w.DispatchInputs() {
			v, given := ev.Inputs[name]
			if !given && d.Default != nil {
				v = d.Default.Value
			}
			in[name] = v // strings here, whatever the input's type
		}
		g["event"] = map[string]any{"inputs": in}
	case "schedule":
		g["event"] = map[string]any{"schedule": "0 0 * * *"}
	}
	return g
}

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

func (e *evaluator) steps(steps []*actionlint.Step, extra map[string]any, env map[string]string) ([]*StepRun, error) {
	stepsCtx := map[string]any{}
	var out []*StepRun
	seen := map[string]int{}
	for i, s := range steps {
		sr := &StepRun{}
		x := map[string]any{"job": map[string]any{"status": "success"}, "runner": runnerContext, "steps": stepsCtx}
		for k, v := range extra {
			x[k] = v
		}
		x["env"] = envObject(env)
		c := ctxOf(e.values, x, stepContexts...)
		stepEnv, err := e.env(s.Env, c, env)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i+1, err)
		}
		sr.Env = map[string]string{}
		if s.Env != nil {
			for _, v := range s.Env.Vars {
				sr.Env[v.Name.Value] = stepEnv[v.Name.Value]
			}
		}
		cond := ""
		if s.If != nil {
			cond = s.If.Value
		}
		ifCtx := ctxOf(e.values, x, stepContexts...)
		delete(ifCtx.Values, "secrets")
		if sr.OnSuccess, err = Condition(cond, ifCtx); err != nil {
			return nil, fmt.Errorf("step %d: %w", i+1, err)
		}
		ifCtx.Status = StatusFailure
		if sr.OnFailure, err = Condition(cond, ifCtx); err != nil {
			return nil, fmt.Errorf("step %d: %w", i+1, err)
		}
		x["env"] = envObject(stepEnv)
		c = ctxOf(e.values, x, stepContexts...)
		switch ex := s.Exec.(type) {
		case *actionlint.ExecRun:
			if sr.Run, err = InterpolateString(ex.Run.Value, c); err != nil {
				return nil, fmt.Errorf("step %d: run: %w", i+1, err)
			}
		case *actionlint.ExecAction:
			sr.Uses = ex.Uses.Value
			sr.With = map[string]string{}
			for _, in := range ex.Inputs {
				if sr.With[in.Name.Value], err = InterpolateString(in.Value.Value, c); err != nil {
					return nil, fmt.Errorf("step %d: with %s: %w", i+1, in.Name.Value, err)
				}
			}
			if strings.HasPrefix(sr.Uses, "./") {
				var outputs map[string]any
				if sr.Steps, outputs, err = e.composite(sr.Uses, sr.With, x, stepEnv); err != nil {
					return nil, fmt.Errorf("step %d: %s: %w", i+1, sr.Uses, err)
				}
				if s.ID != nil {
					stepsCtx[s.ID.Value] = stepResult(outputs)
				}
			}
		}
		sr.Key = stepKey(strOf(s.ID), strOf(s.Name), sr.Uses, sr.Run, seen)
		if _, ok := stepsCtx[strOf(s.ID)]; s.ID != nil && !ok {
			stepsCtx[s.ID.Value] = stepResult(nil)
		}
		out = append(out, sr)
	}
	return out, nil
}

func strOf(s *actionlint.String) string {
	if s == nil {
		return ""
	}
	return s.Value
}

func stepKey(id, name, uses, run string, seen map[string]int) string {
	k := id
	switch {
	case k != "":
	case name != "":
		k = name
	case uses != "":
		k, _, _ = strings.Cut(uses, "@")
	default:
		first, _, _ := strings.Cut(strings.TrimSpace(run), "\n")
		k = "run: " + first
	}
	seen[k]++
	if seen[k] > 1 {
		k = fmt.Sprintf("%s #%d", k, seen[k])
	}
	return k
}

// compositeAction is what workflowcheck reads of a local composite action.
type compositeAction struct {
	Inputs map[string]struct {
		Default  string `yaml:"default"`
		Required bool   `yaml:"required"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Value string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []struct {
			ID    string            `yaml:"id"`
			Name  string            `yaml:"name"`
			If    string            `yaml:"if"`
			Uses  string            `yaml:"uses"`
			Run   string            `yaml:"run"`
			Shell string            `yaml:"shell"`
			Env   map[string]string `yaml:"env"`
			With  map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

// loadComposite reads the local composite action uses (./dir, from the
// repository's root) and returns it with its directory.
func loadComposite(root, uses string) (*compositeAction, string, error) {
	dir := filepath.Join(root, uses)
	data, err := os.ReadFile(filepath.Join(dir, "action.yml"))
	if errors.Is(err, os.ErrNotExist) {
		data, err = os.ReadFile(filepath.Join(dir, "action.yaml"))
	}
	if err != nil {
		return nil, "", err
	}
	var a compositeAction
	if err := yaml.Unmarshal(data, &a); err != nil {
		return nil, "", err
	}
	if a.Runs.Using != "composite" {
		return nil, "", fmt.Errorf("runs.using %q: only composite actions are evaluated", a.Runs.Using)
	}
	return &a, dir, nil
}

// compositeInputs is the inputs context of a composite action given
// with: the values given, the defaults of the others; an input the action
// lacks or a required one not given is an error.
func (e *evaluator) compositeInputs(a *compositeAction, with map[string]string, x map[string]any) (map[string]any, error) {
	for k := range with {
		if _, ok := a.Inputs[k]; !ok {
			return nil, fmt.Errorf("with %s: the action has no such input", k)
		}
	}
	inputs := map[string]any{}
	base := ctxOf(e.values, x, "github", "runner", "env", "vars", "steps", "job", "strategy", "matrix", "inputs")
	for name, in := range a.Inputs {
		if v, ok := with[name]; ok {
			inputs[name] = v
			continue
		}
		if in.Required {
			return nil, fmt.Errorf("input %s is required", name)
		}
		d, err := InterpolateString(in.Default, base)
		if err != nil {
			return nil, fmt.Errorf("input %s: default: %w", name, err)
		}
		inputs[name] = d
	}
	return inputs, nil
}

// composite evaluates the steps of the local action uses (./dir) with
// the inputs with (and the inputs' defaults).
//
// It also returns the action's outputs, each set to a stand-in
// "<output NAME>": what a step of the action writes is not known here.
func (e *evaluator) composite(uses string, with map[string]string, x map[string]any, env map[string]string) ([]*StepRun, map[string]any, error) {
	a, dir, err := loadComposite(e.w.Root, uses)
	if err != nil {
		return nil, nil, err
	}
	inputs, err := e.compositeInputs(a, with, x)
	if err != nil {
		return nil, nil, err
	}
	g := map[string]any{}
	for k, v := range e.values["github"].(map[string]any) {
		g[k] = v
	}
	g["action_path"] = dir
	stepsCtx := map[string]any{}
	values := map[string]any{"github": g, "inputs": inputs, "runner": runnerContext, "vars": map[string]any{},
		"job": x["job"], "strategy": x["strategy"], "matrix": x["matrix"], "steps": stepsCtx}
	var out []*StepRun
	seen := map[string]int{}
	for i, s := range a.Runs.Steps {
		values["env"] = envObject(env)
		c := &Context{Values: values}
		sr := &StepRun{Uses: s.Uses, Env: map[string]string{}, With: map[string]string{}}
		stepEnv := mergeEnv(env, nil)
		for k, v := range s.Env {
			if sr.Env[k], err = InterpolateString(v, c); err != nil {
				return nil, nil, fmt.Errorf("step %d: env %s: %w", i+1, k, err)
			}
			stepEnv[k] = sr.Env[k]
		}
		if sr.OnSuccess, err = Condition(s.If, c); err != nil {
			return nil, nil, fmt.Errorf("step %d: %w", i+1, err)
		}
		sr.OnFailure = sr.OnSuccess
		values["env"] = envObject(stepEnv)
		if s.Run != "" {
			if s.Shell == "" {
				return nil, nil, fmt.Errorf("step %d: a run step of a composite action needs a shell", i+1)
			}
			if sr.Run, err = InterpolateString(s.Run, c); err != nil {
				return nil, nil, fmt.Errorf("step %d: run: %w", i+1, err)
			}
		}
		for k, v := range s.With {
			if sr.With[k], err = InterpolateString(v, c); err != nil {
				return nil, nil, fmt.Errorf("step %d: with %s: %w", i+1, k, err)
			}
		}
		if strings.HasPrefix(s.Uses, "./") {
			var outputs map[string]any
			if sr.Steps, outputs, err = e.composite(s.Uses, sr.With, x, stepEnv); err != nil {
				return nil, nil, fmt.Errorf("step %d: %s: %w", i+1, s.Uses, err)
			}
			if s.ID != "" {
				stepsCtx[s.ID] = stepResult(outputs)
			}
		}
		sr.Key = stepKey(s.ID, s.Name, sr.Uses, sr.Run, seen)
		if _, ok := stepsCtx[s.ID]; s.ID != "" && !ok {
			stepsCtx[s.ID] = stepResult(nil)
		}
		out = append(out, sr)
	}
	outputs := map[string]any{}
	for name := range a.Outputs {
		outputs[name] = "<output " + name + ">"
	}
	return out, outputs, nil
}

// stepResult is a step's entry in the steps context: it succeeded, with
// these outputs.
func stepResult(outputs map[string]any) map[string]any {
	if outputs == nil {
		outputs = map[string]any{}
	}
	return map[string]any{"outcome": "success", "conclusion": "success", "outputs": outputs}
}

// Facts flattens a run into "key": "value" lines a test can compare:
//
//	JOB                          runs | skipped
//	JOB.runs-on                  the labels, joined by ","
//	JOB.timeout-minutes          the timeout
//	JOB.concurrency              the concurrency group
//	JOB.env.NAME                 a job env variable
//	JOB.steps[KEY]               runs | skipped (after every step before succeeded)
//	JOB.steps[KEY].after-failure runs | skipped (after a step before failed)
//	JOB.steps[KEY].env.NAME      a step env variable
//	JOB.steps[KEY].with.NAME     an input of the action the step uses
//	JOB.steps[KEY].steps[KEY2]   a step of that (local, composite) action, and so on
func (r *Run) Facts() map[string]string {
	f := map[string]string{}
	for _, j := range r.Jobs {
		f[j.ID] = runsWord(j.Runs)
		if !j.Runs {
			continue
		}
		f[j.ID+".runs-on"] = strings.Join(j.RunsOn, ",")
		f[j.ID+".timeout-minutes"] = j.TimeoutMinutes
		f[j.ID+".concurrency"] = j.Concurrency
		for k, v := range j.Env {
			f[j.ID+".env."+k] = v
		}
		stepFacts(f, j.ID, j.Steps)
	}
	return f
}

func stepFacts(f map[string]string, prefix string, steps []*StepRun) {
	for _, s := range steps {
		p := prefix + ".steps[" + s.Key + "]"
		f[p] = runsWord(s.OnSuccess)
		f[p+".after-failure"] = runsWord(s.OnFailure)
		for k, v := range s.Env {
			f[p+".env."+k] = v
		}
		for k, v := range s.With {
			f[p+".with."+k] = v
		}
		stepFacts(f, p, s.Steps)
	}
}

func runsWord(b bool) string {
	if b {
		return "runs"
	}
	return "skipped"
}

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
// Push and schedule runs are on main, or a push of Tag when it is set; a
// pull request is from a branch into main.
type Event struct {
	Name   string
	Inputs map[string]string
	Tag    string
}

func (e Event) String() string {
	if e.Tag != "" {
		return e.Name + " of tag " + e.Tag
	}
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
	if ev.Tag != "" {
		g["ref"], g["ref_name"], g["ref_type"] = "refs/tags/"+ev.Tag, ev.Tag, "tag"
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

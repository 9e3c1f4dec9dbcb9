package workflowcheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rhysd/actionlint"
	"go.yaml.in/yaml/v4"
)

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

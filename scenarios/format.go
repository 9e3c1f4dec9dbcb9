package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Scenario is one reboot scenario: nodes, their modules, a timeline of
// actions and the verdict expected of each subject.
type Scenario struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Labels      []string `yaml:"labels"`
	// Nodes is how many nodes the scenario runs on.
	Nodes int `yaml:"nodes"`
	// Modules are in every node's NodeModulesConfig at the start.
	Modules []Module `yaml:"modules"`
	// Timing is the kubelet timing profile: fast or kubelet-defaults.
	Timing string `yaml:"timing"`
	// PodLatency overrides the simulated worker's Pending->Running and
	// Running->done latencies (for scenarios that act while a load runs).
	PodLatency Duration `yaml:"podLatency"`
	// Precondition is what the scenario claims about Ready: "fast" (Ready
	// never leaves True), "slow" (Ready leaves True after a reboot) or
	// "recorded" (observed and reported, not required).
	Precondition string `yaml:"precondition"`
	// Deadline bounds every wait-reloaded; default 30s.
	Deadline Duration `yaml:"deadline"`
	// Expect is the outcome each subject should get: pass, fail, or
	// fail through named assertions (fail:reload).
	Expect map[string]Expectation `yaml:"expect"`
	// Actions run in order.
	Actions []Action `yaml:"-"`

	// Source is the file the scenario came from.
	Source string `yaml:"-"`
}

// Module is a kernel module in a node's NodeModulesConfig.
type Module struct {
	// Name is the NMC entry name.
	Name string `yaml:"name"`
	// ModuleName is modprobe's name; default Name.
	ModuleName string `yaml:"moduleName"`
	// LoadingOrder is modprobe.modulesLoadingOrder.
	LoadingOrder []string `yaml:"loadingOrder"`
}

// Action kinds.
const (
	ActReboot         = "reboot"
	ActRestartKubelet = "restart-kubelet"
	ActNetworkBlip    = "network-blip"
	ActPauseNode      = "pause-node"
	ActPauseSubject   = "pause-subject"
	ActResumeSubject  = "resume-subject"
	ActRestartSubject = "restart-subject"
	ActWaitReloaded   = "wait-reloaded"
	ActWaitWorker     = "wait-worker"
	ActRemoveModule   = "remove-module"
	ActAddModule      = "add-module"
	ActUpdateKernel   = "update-kernel-version"
	ActSleep          = "sleep"
)

// actionFields lists the parameters each action accepts.
var actionFields = map[string][]string{
	ActReboot:         {"on", "mode", "downtime", "startup", "kernelVersion", "stagger", "wait"},
	ActRestartKubelet: {"on", "downtime", "stagger"},
	ActNetworkBlip:    {"on", "duration", "stagger"},
	ActPauseNode:      {"on", "duration", "stagger"},
	ActPauseSubject:   {},
	ActResumeSubject:  {},
	ActRestartSubject: {"downtime"},
	ActWaitReloaded:   {"on", "timeout"},
	ActWaitWorker:     {"on", "module", "action", "state", "timeout"},
	ActRemoveModule:   {"on", "module"},
	ActAddModule:      {"on", "module", "moduleName", "loadingOrder"},
	ActUpdateKernel:   {"on"},
	ActSleep:          {"duration"},
}

// PausesSubject reports whether the timeline stops or restarts the
// subject (pause-subject, restart-subject). A subject that several cases
// share must run such a case alone.
func (s *Scenario) PausesSubject() bool {
	return slices.ContainsFunc(s.Actions, func(a Action) bool {
		return a.Kind == ActPauseSubject || a.Kind == ActRestartSubject
	})
}

// ActionKinds lists the action names, sorted.
func ActionKinds() []string {
	var out []string
	for k := range actionFields {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Action is one step of a scenario, written as a one-key mapping:
//
//   - reboot: {on: all, downtime: 0.5g, startup: ready}
type Action struct {
	Kind string
	// On targets nodes: "all" (default), an index "0", or a list "0,2".
	On Target
	// Mode is the reboot mode (reset, guest, panic, power-cycle); default reset.
	Mode string
	// Downtime of a reboot, kubelet restart or subject restart.
	Downtime Duration
	// Startup: "ready" or "blip:<duration>".
	Startup Startup
	// KernelVersion boots a new kernel version.
	KernelVersion string
	// Stagger spaces the targeted nodes' starts; 0 means all at once.
	Stagger Duration
	// Wait (reboot) waits until every targeted node is back; default true.
	Wait bool
	// Duration of a network blip or a sleep.
	Duration Duration
	// Timeout of a wait; default the scenario's Deadline.
	Timeout Duration
	// Module, WorkerAction, State select worker pods (wait-worker) and
	// name the module added or removed.
	Module       string
	ModuleName   string
	LoadingOrder []string
	WorkerAction string
	State        string

	Line int
}

// Target selects nodes by index.
type Target struct {
	All     bool
	Indexes []int
}

// Nodes resolves the target against n nodes.
func (t Target) Nodes(n int) []int {
	if t.All || len(t.Indexes) == 0 {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	return slices.Clone(t.Indexes)
}

// Duration is an absolute duration ("3s") or a fraction of the grace
// period ("0.5g").
type Duration struct {
	Abs   time.Duration
	Grace float64
	Set   bool
}

// Resolve returns the duration for grace period g.
func (d Duration) Resolve(g time.Duration) time.Duration {
	if d.Grace != 0 {
		return time.Duration(d.Grace * float64(g))
	}
	return d.Abs
}

func (d Duration) String() string {
	switch {
	case !d.Set:
		return ""
	case d.Grace != 0:
		return strconv.FormatFloat(d.Grace, 'f', -1, 64) + "g"
	default:
		return d.Abs.String()
	}
}

var (
	graceRE    = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?)g$`)
	durationRE = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$`)
)

// Bounds of a scenario duration: beyond them a scenario no longer tests
// a reboot (and a multiple of the grace period could overflow).
const (
	MaxDuration      = time.Hour
	MaxGraceMultiple = 100
)

// ParseDuration reads "3s", "500ms" or "0.5g", at most MaxDuration or
// MaxGraceMultiple g.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if m := graceRE.FindStringSubmatch(s); m != nil {
		f, err := strconv.ParseFloat(m[1], 64)
		if err != nil || f > MaxGraceMultiple {
			return Duration{}, fmt.Errorf("%q is more than %dg: accepted: up to %dg or %s", s, MaxGraceMultiple, MaxGraceMultiple, MaxDuration)
		}
		return Duration{Grace: f, Set: true}, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil && durationRE.MatchString(s):
		d = MaxDuration + 1 // well formed, too long for a time.Duration
	case err != nil:
		return Duration{}, fmt.Errorf("%q is neither a duration (e.g. 3s) nor a fraction of the grace period (e.g. 0.5g)", s)
	}
	if d < 0 {
		return Duration{}, fmt.Errorf("%q is negative", s)
	}
	if d > MaxDuration {
		return Duration{}, fmt.Errorf("%q is longer than %s: accepted: up to %s or %dg", s, MaxDuration, MaxDuration, MaxGraceMultiple)
	}
	return Duration{Abs: d, Set: true}, nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &FieldError{Line: n.Line, column: n.Column, Msg: "want a duration such as 3s or 0.5g"}
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return &FieldError{Line: n.Line, column: n.Column, Msg: err.Error()}
	}
	*d = v
	return nil
}

// Startup is the kubelet's startup behaviour after a reboot.
type Startup struct {
	NotReadyFor Duration
}

// FieldError is a decoding error at a line of a scenario file.
type FieldError struct {
	File  string
	Line  int
	Field string
	Msg   string
	// column of the offending value, when known: it finds the field
	// among several on one line ({a: 1, b: x}).
	column int
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %s", e.Field)
	}
	fmt.Fprintf(&b, ": %s", e.Msg)
	return b.String()
}

// Decode reads one scenario from YAML, strictly: unknown fields, wrong
// types and impossible values are errors naming file, line and field.
func Decode(file string, data []byte) (*Scenario, error) {
	var raw struct {
		Scenario `yaml:",inline"`
		Actions  []yaml.Node `yaml:"actions"`
	}
	doc, err := DecodeStrict(file, data, &raw)
	if err != nil {
		return nil, err
	}
	s := raw.Scenario
	s.Source = file
	for i := range raw.Actions {
		a, err := decodeAction(&raw.Actions[i])
		if err != nil {
			return nil, withFile(file, fmt.Sprintf("actions[%d]", i), err)
		}
		s.Actions = append(s.Actions, a)
	}
	if err := s.validate(doc); err != nil {
		return nil, withFile(file, "", err)
	}
	return &s, nil
}

// DecodeStrict decodes one YAML document into v: unknown fields, wrong
// types and a FieldError from a field's own UnmarshalYAML are errors
// naming file, line and field (a *FieldError). It returns the document's
// node, for the lines of later validation errors (see FieldLine).
func DecodeStrict(file string, data []byte, v any) (*yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, wrapYAML(file, err)
	}
	if len(root.Content) == 0 {
		return nil, &FieldError{File: file, Msg: "empty document"}
	}
	doc := root.Content[0]
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		err := wrapYAML(file, err)
		var fe *FieldError
		switch {
		case !errors.As(err, &fe) || fe.Line == 0:
		case fe.Field == "":
			fe.Field = keyAtLine(doc, fe.Line, fe.column, "")
		default:
			// An unknown key: its full path (yaml.v3 names only the key).
			if p := keyPath(doc, fe.Line, fe.Field, ""); p != "" {
				fe.Field = p
			}
		}
		return nil, err
	}
	return doc, nil
}

// FieldLine returns the line of the mapping key at path (e.g. "exec",
// "command") in a document DecodeStrict returned; 0 when absent.
func FieldLine(doc *yaml.Node, path ...string) int {
	line := 0
	for _, key := range path {
		if doc == nil || doc.Kind != yaml.MappingNode {
			return line
		}
		var next *yaml.Node
		for i := 0; i+1 < len(doc.Content); i += 2 {
			if doc.Content[i].Value == key {
				line, next = doc.Content[i].Line, doc.Content[i+1]
				break
			}
		}
		if next == nil {
			return line
		}
		doc = next
	}
	return line
}

func withFile(file, field string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		c := *fe
		c.File = file
		if c.Field == "" {
			c.Field = field
		} else if field != "" {
			c.Field = field + "." + c.Field
		}
		return &c
	}
	return &FieldError{File: file, Field: field, Msg: err.Error()}
}

var yamlLineRE = regexp.MustCompile(`line (\d+): (.*)`)

// wrapYAML turns yaml.v3's errors ("line 3: field x not found in type ...")
// into FieldErrors with the line and the field.
func wrapYAML(file string, err error) error {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return withFile(file, "", fe)
	}
	out := &FieldError{File: file, Msg: strings.TrimPrefix(msg, "yaml: ")}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		out.Line, _ = strconv.Atoi(m[1])
		out.Msg = m[2]
		if f := regexp.MustCompile(`field (\S+) not found`).FindStringSubmatch(m[2]); f != nil {
			out.Field = f[1]
			out.Msg = "unknown field"
		}
	}
	return out
}

func decodeAction(n *yaml.Node) (Action, error) {
	a := Action{Line: n.Line, Wait: true}
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return a, &FieldError{Line: n.Line, Msg: "an action is a mapping with one key, the action's name: one of " + strings.Join(ActionKinds(), ", ")}
	}
	key, val := n.Content[0], n.Content[1]
	a.Kind = key.Value
	allowed, ok := actionFields[a.Kind]
	if !ok {
		return a, &FieldError{Line: key.Line, Msg: fmt.Sprintf("unknown action %q: accepted: %s", a.Kind, strings.Join(ActionKinds(), ", "))}
	}
	if val.Kind == yaml.ScalarNode && (val.Value == "" || val.Tag == "!!null") {
		return a, nil
	}
	if val.Kind != yaml.MappingNode {
		return a, &FieldError{Line: val.Line, Field: a.Kind, Msg: "want a mapping of parameters, e.g. {}"}
	}
	for i := 0; i < len(val.Content); i += 2 {
		k, v := val.Content[i], val.Content[i+1]
		field := a.Kind + "." + k.Value
		if !slices.Contains(allowed, k.Value) {
			return a, &FieldError{Line: k.Line, Field: field, Msg: fmt.Sprintf("unknown field: %s accepts %s", a.Kind, acceptList(allowed))}
		}
		if err := setActionField(&a, k.Value, v); err != nil {
			return a, &FieldError{Line: v.Line, Field: field, Msg: err.Error()}
		}
	}
	return a, nil
}

func acceptList(s []string) string {
	if len(s) == 0 {
		return "no parameters"
	}
	return strings.Join(s, ", ")
}

func setActionField(a *Action, name string, v *yaml.Node) error {
	str := func() (string, error) {
		if v.Kind != yaml.ScalarNode {
			return "", errors.New("want a single value")
		}
		return v.Value, nil
	}
	dur := func(dst *Duration) error {
		s, err := str()
		if err != nil {
			return err
		}
		d, err := ParseDuration(s)
		if err != nil {
			return err
		}
		*dst = d
		return nil
	}
	switch name {
	case "on":
		t, err := parseTarget(v)
		a.On = t
		return err
	case "mode":
		s, err := str()
		a.Mode = s
		return err
	case "downtime":
		return dur(&a.Downtime)
	case "duration":
		return dur(&a.Duration)
	case "timeout":
		return dur(&a.Timeout)
	case "stagger":
		return dur(&a.Stagger)
	case "startup":
		s, err := str()
		if err != nil {
			return err
		}
		switch {
		case s == "ready":
		case strings.HasPrefix(s, "blip:"):
			d, err := ParseDuration(strings.TrimPrefix(s, "blip:"))
			if err != nil {
				return fmt.Errorf("blip: %w", err)
			}
			a.Startup.NotReadyFor = d
		default:
			return fmt.Errorf("%q: accepted: ready, blip:<duration> (e.g. blip:2s)", s)
		}
	case "kernelVersion":
		s, err := str()
		a.KernelVersion = s
		return err
	case "wait":
		s, err := str()
		if err != nil {
			return err
		}
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q: accepted: true, false", s)
		}
		a.Wait = b
	case "module":
		s, err := str()
		a.Module = s
		return err
	case "moduleName":
		s, err := str()
		a.ModuleName = s
		return err
	case "loadingOrder":
		if v.Kind != yaml.SequenceNode {
			return errors.New("want a list of module names")
		}
		for _, c := range v.Content {
			a.LoadingOrder = append(a.LoadingOrder, c.Value)
		}
	case "action":
		s, err := str()
		if err != nil {
			return err
		}
		if s != "Load" && s != "Unload" {
			return fmt.Errorf("%q: accepted: Load, Unload", s)
		}
		a.WorkerAction = s
	case "state":
		s, err := str()
		if err != nil {
			return err
		}
		if s != "created" && s != "running" && s != "succeeded" {
			return fmt.Errorf("%q: accepted: created, running, succeeded", s)
		}
		a.State = s
	}
	return nil
}

func parseTarget(v *yaml.Node) (Target, error) {
	if v.Kind == yaml.ScalarNode && v.Value == "all" {
		return Target{All: true}, nil
	}
	var items []*yaml.Node
	switch v.Kind {
	case yaml.ScalarNode:
		items = []*yaml.Node{v}
	case yaml.SequenceNode:
		items = v.Content
	default:
		return Target{}, errors.New("want all, a node index or a list of indexes")
	}
	var t Target
	for _, it := range items {
		i, err := strconv.Atoi(it.Value)
		if err != nil || i < 0 {
			return Target{}, fmt.Errorf("%q: accepted: all, a node index (0, 1, ...) or a list of indexes", it.Value)
		}
		if slices.Contains(t.Indexes, i) {
			return Target{}, fmt.Errorf("node %d is listed twice: list each node once", i)
		}
		t.Indexes = append(t.Indexes, i)
	}
	return t, nil
}

// Subjects whose expectations a scenario may state.
var knownSubjects = []string{"bootid", "legacy", "external"}

// Timing profile names (the fakes package's profiles).
var knownTimings = []string{"fast", "kubelet-defaults"}

// keyAtLine returns the path of the mapping key whose value starts at
// line (and column, when not 0).
func keyAtLine(n *yaml.Node, line, column int, prefix string) string {
	return findPath(n, prefix, true, func(k, v *yaml.Node) bool {
		if column > 0 && (v.Line != line || v.Column != column) {
			return false
		}
		return v.Line == line && (v.Kind == yaml.ScalarNode || k.Line == line)
	})
}

// keyPath returns the path of the mapping key named key at line.
func keyPath(n *yaml.Node, line int, key, prefix string) string {
	return findPath(n, prefix, false, func(k, _ *yaml.Node) bool { return k.Line == line && k.Value == key })
}

// findPath walks n depth-first and returns the path (a.b[0].c) of the
// first mapping entry match accepts; with childFirst an entry's value is
// searched before the entry itself is tried.
func findPath(n *yaml.Node, prefix string, childFirst bool, match func(k, v *yaml.Node) bool) string {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			path := k.Value
			if prefix != "" {
				path = prefix + "." + k.Value
			}
			if !childFirst && match(k, v) {
				return path
			}
			if p := findPath(v, path, childFirst, match); p != "" {
				return p
			}
			if childFirst && match(k, v) {
				return path
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if p := findPath(c, fmt.Sprintf("%s[%d]", prefix, i), childFirst, match); p != "" {
				return p
			}
		}
	}
	return ""
}

func lineOf(doc *yaml.Node, key string) int { return FieldLine(doc, key) }

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

func (s *Scenario) validate(doc *yaml.Node) error {
	bad := func(field, msg string) error { return &FieldError{Line: lineOf(doc, field), Field: field, Msg: msg} }
	if !nameRE.MatchString(s.Name) {
		return bad("name", fmt.Sprintf("%q: accepted: lower-case letters, digits, '-' and '.', e.g. fast-reboot-0.5g", s.Name))
	}
	if s.Nodes < 1 || s.Nodes > 1000 {
		return bad("nodes", fmt.Sprintf("%d: accepted: 1 to 1000", s.Nodes))
	}
	if len(s.Modules) == 0 {
		return bad("modules", "at least one module is needed")
	}
	seen := map[string]bool{}
	for i := range s.Modules {
		m := &s.Modules[i]
		if !nameRE.MatchString(m.Name) {
			return bad("modules", fmt.Sprintf("modules[%d].name %q: accepted: a DNS-style name", i, m.Name))
		}
		if seen[m.Name] {
			return bad("modules", fmt.Sprintf("module %s listed twice", m.Name))
		}
		seen[m.Name] = true
		if m.ModuleName == "" {
			m.ModuleName = strings.ReplaceAll(m.Name, "-", "_")
		}
		if len(m.LoadingOrder) > 0 && m.LoadingOrder[0] != m.ModuleName {
			return bad("modules", fmt.Sprintf("modules[%d].loadingOrder must start with moduleName %s", i, m.ModuleName))
		}
	}
	if s.Timing == "" {
		s.Timing = "fast"
	}
	if !slices.Contains(knownTimings, s.Timing) {
		return bad("timing", fmt.Sprintf("%q: accepted: %s", s.Timing, strings.Join(knownTimings, ", ")))
	}
	switch s.Precondition {
	case "fast", "slow", "recorded":
	case "":
		s.Precondition = "recorded"
	default:
		return bad("precondition", fmt.Sprintf("%q: accepted: fast, slow, recorded", s.Precondition))
	}
	if !s.Deadline.Set {
		s.Deadline = Duration{Abs: 30 * time.Second, Set: true}
	}
	if len(s.Expect) == 0 {
		return bad("expect", "say what each subject should get, e.g. {bootid: pass, legacy: fail}")
	}
	for subj, v := range s.Expect {
		if !slices.Contains(knownSubjects, subj) {
			return bad("expect", fmt.Sprintf("unknown subject %q: accepted: %s (a subject file states its own expectations)", subj, strings.Join(knownSubjects, ", ")))
		}
		if subj == "external" && v.Outcome != Pass {
			return bad("expect", "external: an external operator is always expected to pass")
		}
		v.Source = "scenario " + s.Name
		s.Expect[subj] = v
	}
	if len(s.Actions) == 0 {
		return bad("actions", "at least one action is needed")
	}
	paused := false
	for i, a := range s.Actions {
		at := func(msg string) error {
			return &FieldError{Line: a.Line, Field: fmt.Sprintf("actions[%d].%s", i, a.Kind), Msg: msg}
		}
		for _, idx := range a.On.Indexes {
			if idx >= s.Nodes {
				return at(fmt.Sprintf("on: node %d does not exist: the scenario has %d nodes (0 to %d)", idx, s.Nodes, s.Nodes-1))
			}
		}
		switch a.Kind {
		case ActReboot:
			if !a.Downtime.Set {
				return at("downtime is required, e.g. 0.5g or 3s")
			}
			switch a.Mode {
			case "", "reset", "guest", "panic", "power-cycle":
			default:
				return at(fmt.Sprintf("mode %q: accepted: reset, guest, panic, power-cycle", a.Mode))
			}
		case ActRestartKubelet:
			if !a.Downtime.Set {
				return at("downtime is required")
			}
		case ActNetworkBlip, ActPauseNode, ActSleep:
			if !a.Duration.Set {
				return at("duration is required")
			}
		case ActRemoveModule, ActAddModule:
			if a.Module == "" {
				return at("module is required")
			}
			if a.Kind == ActRemoveModule && !seen[a.Module] {
				return at(fmt.Sprintf("module %q is not among the scenario's modules", a.Module))
			}
		case ActWaitWorker:
			if a.State == "" {
				return at("state is required: created, running or succeeded")
			}
		case ActPauseSubject:
			if paused {
				return at("the subject is already paused")
			}
			paused = true
		case ActResumeSubject:
			if !paused {
				return at("the subject is not paused")
			}
			paused = false
		}
	}
	if paused {
		return bad("actions", "the subject is paused at the end: add resume-subject")
	}
	return nil
}

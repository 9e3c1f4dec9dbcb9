package scenarios

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/scenarios/fileformat"
	"go.yaml.in/yaml/v3"
)

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

func (s *Scenario) validate(doc *yaml.Node) error {
	bad := func(field, msg string) error {
		return &fileformat.FieldError{Line: fileformat.FieldLine(doc, field), Field: field, Msg: msg}
	}
	if !nameRE.MatchString(s.Name) {
		return bad("name", fmt.Sprintf("%q: accepted: lower-case letters, digits, '-' and '.', e.g. fast-reboot-0.5g", s.Name))
	}
	if s.Nodes < 1 || s.Nodes > 1000 {
		return bad("nodes", fmt.Sprintf("%d: accepted: 1 to 1000", s.Nodes))
	}
	if msg := s.validateModules(); msg != "" {
		return bad("modules", msg)
	}
	if s.Timing == "" {
		s.Timing = nodeapi.TimingFast
	}
	if !s.Timing.Valid() {
		return bad("timing", fmt.Sprintf("%q: accepted: %s", s.Timing, nodeapi.JoinTimingProfiles(nodeapi.TimingProfiles())))
	}
	if s.Precondition == "" {
		s.Precondition = PreconditionRecorded
	}
	if !slices.Contains(Preconditions(), s.Precondition) {
		return bad("precondition", fmt.Sprintf("%q: accepted: %s", s.Precondition, joinPreconditions()))
	}
	if !s.Deadline.Set {
		s.Deadline = Duration{Abs: 30 * time.Second, Set: true}
	}
	if b := s.ReloadBound; b.FirstLoadTimes != 0 && (b.FirstLoadTimes < 1 || b.FirstLoadTimes > MaxReloadTimes) {
		return bad("reloadBound", fmt.Sprintf("firstLoadTimes %v: accepted: %d to %d (a reload is given at least as long as the first load took)", b.FirstLoadTimes, 1, MaxReloadTimes))
	}
	if b := s.ReloadBound; b.AtLeast.Set && b.AtLeast.Resolve(time.Second) <= 0 {
		return bad("reloadBound", "atLeast 0: accepted: a positive duration (e.g. 5s or 0.5g)")
	}
	s.ReloadBound = s.ReloadBound.withDefaults()
	if msg := s.validateExpect(); msg != "" {
		return bad("expect", msg)
	}
	if len(s.Actions) == 0 {
		return bad("actions", "at least one action is needed")
	}
	if err := s.validateActions(); err != nil {
		return err
	}
	if s.pausedAtEnd() {
		return bad("actions", "the subject is paused at the end: add resume-subject")
	}
	return nil
}

// validateModules checks the modules and defaults their moduleName.
func (s *Scenario) validateModules() string {
	if len(s.Modules) == 0 {
		return "at least one module is needed"
	}
	seen := map[string]bool{}
	for i := range s.Modules {
		m := &s.Modules[i]
		if !nameRE.MatchString(m.Name) {
			return fmt.Sprintf("modules[%d].name %q: accepted: a DNS-style name", i, m.Name)
		}
		if seen[m.Name] {
			return fmt.Sprintf("module %s listed twice", m.Name)
		}
		seen[m.Name] = true
		if m.ModuleName == "" {
			m.ModuleName = strings.ReplaceAll(m.Name, "-", "_")
		}
		if len(m.LoadingOrder) > 0 && m.LoadingOrder[0] != m.ModuleName {
			return fmt.Sprintf("modules[%d].loadingOrder must start with moduleName %s", i, m.ModuleName)
		}
	}
	return ""
}

// validateExpect checks the subjects named in expect and records where
// each expectation came from.
func (s *Scenario) validateExpect() string {
	if len(s.Expect) == 0 {
		return "say what each subject should get, e.g. {bootid: pass, legacy: fail}"
	}
	for subj, v := range s.Expect {
		if !slices.Contains(KnownSubjects(), subj) {
			return fmt.Sprintf("unknown subject %q: accepted: %s (a subject file states its own expectations)", subj, strings.Join(KnownSubjects(), ", "))
		}
		if subj == SubjectExternal && v.Outcome != Pass {
			return "external: an external operator is always expected to pass"
		}
		v.Source = "scenario " + s.Name
		s.Expect[subj] = v
	}
	return ""
}

// validateActions checks each action against its kind's rules and the
// scenario's nodes, and that pause-subject and resume-subject pair up.
func (s *Scenario) validateActions() error {
	paused, refusing := false, -1
	for i, a := range s.Actions {
		at := func(msg string) error {
			return &fileformat.FieldError{Line: a.Line, Field: fmt.Sprintf("actions[%d].%s", i, a.Kind), Msg: msg}
		}
		for _, idx := range a.On.Indexes {
			if idx >= s.Nodes {
				return at(fmt.Sprintf("on: node %d does not exist: the scenario has %d nodes (0 to %d)", idx, s.Nodes, s.Nodes-1))
			}
		}
		if check := actionTable[a.Kind].check; check != nil {
			if msg := check(s, a); msg != "" {
				return at(msg)
			}
		}
		switch a.Kind {
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
		case ActRefuseWrites:
			if refusing >= 0 {
				return at(fmt.Sprintf("writes are already refused (actions[%d]); allow-writes comes between two refuse-writes", refusing))
			}
			refusing = i
		case ActAllowWrites:
			if refusing < 0 {
				return at("writes are not refused: allow-writes follows a refuse-writes")
			}
			refusing = -1
		}
	}
	if refusing >= 0 {
		a := s.Actions[refusing]
		return &fileformat.FieldError{Line: a.Line, Field: fmt.Sprintf("actions[%d].%s", refusing, a.Kind),
			Msg: "writes are still refused when the timeline ends: add allow-writes: {} after it (a subject is judged on what it did once it could act)"}
	}
	return nil
}

// refusesWrites reports whether the timeline has refuse-writes.
func (s *Scenario) refusesWrites() bool {
	return slices.ContainsFunc(s.Actions, func(a Action) bool { return a.Kind == ActRefuseWrites })
}

// pausedAtEnd reports whether the timeline leaves the subject paused.
func (s *Scenario) pausedAtEnd() bool {
	paused := false
	for _, a := range s.Actions {
		switch a.Kind {
		case ActPauseSubject:
			paused = true
		case ActResumeSubject:
			paused = false
		}
	}
	return paused
}

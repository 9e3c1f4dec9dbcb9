package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bootproof/bootproof/nodeapi"
	"github.com/bootproof/bootproof/scenarios/fileformat"
	"go.yaml.in/yaml/v3"
)

// ActionKinds lists the action names, sorted.
func ActionKinds() []string {
	var out []string
	for k := range actionTable {
		out = append(out, string(k))
	}
	slices.Sort(out)
	return out
}

func decodeAction(n *yaml.Node) (Action, error) {
	a := Action{Line: n.Line, Wait: true}
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return a, &fileformat.FieldError{Line: n.Line, Msg: "an action is a mapping with one key, the action's name: one of " + strings.Join(ActionKinds(), ", ")}
	}
	key, val := n.Content[0], n.Content[1]
	a.Kind = ActionKind(key.Value)
	spec, ok := actionTable[ActionKind(key.Value)]
	allowed := spec.fields
	if !ok {
		return a, &fileformat.FieldError{Line: key.Line, Msg: fmt.Sprintf("unknown action %q: accepted: %s", a.Kind, strings.Join(ActionKinds(), ", "))}
	}
	if val.Kind == yaml.ScalarNode && (val.Value == "" || val.Tag == "!!null") {
		return a, nil
	}
	if val.Kind != yaml.MappingNode {
		return a, &fileformat.FieldError{Line: val.Line, Field: string(a.Kind), Msg: "want a mapping of parameters, e.g. {}"}
	}
	for i := 0; i < len(val.Content); i += 2 {
		k, v := val.Content[i], val.Content[i+1]
		field := string(a.Kind) + "." + k.Value
		if !slices.Contains(allowed, k.Value) {
			return a, &fileformat.FieldError{Line: k.Line, Field: field, Msg: fmt.Sprintf("unknown field: %s accepts %s", a.Kind, acceptList(allowed))}
		}
		if err := setActionField(&a, k.Value, v); err != nil {
			return a, &fileformat.FieldError{Line: v.Line, Field: field, Msg: err.Error()}
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

// setActionField sets parameter name of a from v; decodeAction has
// checked that the action accepts it.
func setActionField(a *Action, name string, v *yaml.Node) error {
	set, ok := fieldSetters[name]
	if !ok {
		return fmt.Errorf("no setter for field %s", name)
	}
	return set(a, v)
}

// fieldSetters decode each action parameter; which action accepts which
// is the action table's fields.
var fieldSetters = map[string]func(a *Action, v *yaml.Node) error{
	"on": func(a *Action, v *yaml.Node) (err error) {
		a.On, err = parseTarget(v)
		return err
	},
	"mode": func(a *Action, v *yaml.Node) error {
		s, err := scalar(v)
		a.Mode = nodeapi.RebootMode(s)
		return err
	},
	"downtime":      func(a *Action, v *yaml.Node) error { return durationField(&a.Downtime, v) },
	"duration":      func(a *Action, v *yaml.Node) error { return durationField(&a.Duration, v) },
	"timeout":       func(a *Action, v *yaml.Node) error { return durationField(&a.Timeout, v) },
	"stagger":       func(a *Action, v *yaml.Node) error { return durationField(&a.Stagger, v) },
	"startup":       setStartup,
	"kernelVersion": func(a *Action, v *yaml.Node) error { return stringField(&a.KernelVersion, v) },
	"module":        func(a *Action, v *yaml.Node) error { return stringField(&a.Module, v) },
	"moduleName":    func(a *Action, v *yaml.Node) error { return stringField(&a.ModuleName, v) },
	"wait": func(a *Action, v *yaml.Node) error {
		s, err := scalar(v)
		if err != nil {
			return err
		}
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q: accepted: true, false", s)
		}
		a.Wait = b
		return nil
	},
	"loadingOrder": func(a *Action, v *yaml.Node) error {
		if v.Kind != yaml.SequenceNode {
			return errors.New("want a list of module names")
		}
		for _, c := range v.Content {
			a.LoadingOrder = append(a.LoadingOrder, c.Value)
		}
		return nil
	},
	"writes": func(a *Action, v *yaml.Node) error {
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			return fmt.Errorf("want a list of %s", strings.Join(RefusableWrites(), ", "))
		}
		for _, c := range v.Content {
			if !slices.Contains(RefusableWrites(), c.Value) || slices.Contains(a.Writes, c.Value) {
				return fmt.Errorf("%q: accepted: %s, each once", c.Value, strings.Join(RefusableWrites(), ", "))
			}
			a.Writes = append(a.Writes, c.Value)
		}
		return nil
	},
	"count": func(a *Action, v *yaml.Node) error {
		s, err := scalar(v)
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxRejectedPods {
			return fmt.Errorf("%q: accepted: a whole number from 1 to %d", s, MaxRejectedPods)
		}
		a.Count = n
		return nil
	},
	"action": func(a *Action, v *yaml.Node) error { return oneOf(&a.WorkerAction, v, "Load", "Unload") },
	"state":  func(a *Action, v *yaml.Node) error { return oneOf(&a.State, v, "created", "running", "succeeded") },
}

func scalar(v *yaml.Node) (string, error) {
	if v.Kind != yaml.ScalarNode {
		return "", errors.New("want a single value")
	}
	return v.Value, nil
}

func stringField(dst *string, v *yaml.Node) (err error) {
	*dst, err = scalar(v)
	return err
}

func durationField(dst *Duration, v *yaml.Node) error {
	s, err := scalar(v)
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

func oneOf(dst *string, v *yaml.Node, accepted ...string) error {
	s, err := scalar(v)
	if err != nil {
		return err
	}
	if !slices.Contains(accepted, s) {
		return fmt.Errorf("%q: accepted: %s", s, strings.Join(accepted, ", "))
	}
	*dst = s
	return nil
}

func setStartup(a *Action, v *yaml.Node) error {
	s, err := scalar(v)
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

package scenarios

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bootproof/bootproof/scenarios/fileformat"
	"github.com/bootproof/bootproof/scenarios/judging"
	"go.yaml.in/yaml/v3"
)

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
		return &fileformat.FieldError{Line: n.Line, Column: n.Column, Msg: "want a duration such as 3s or 0.5g"}
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return &fileformat.FieldError{Line: n.Line, Column: n.Column, Msg: err.Error()}
	}
	*d = v
	return nil
}

// HumanMS renders a duration in milliseconds for a person, the one
// rounding every message and report uses: "529 ms" under a second,
// "5.3 s" under ten seconds, "42 s" under a minute, then "2 min 5 s" and
// "1 h 3 min".
func HumanMS(ms int64) string { return judging.HumanMS(ms) }

// HumanDuration is HumanMS for a time.Duration.
func HumanDuration(d time.Duration) string { return HumanMS(d.Milliseconds()) }

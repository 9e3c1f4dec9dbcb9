package subject

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bootproof/bootproof/kmm/variant"
	"github.com/bootproof/bootproof/scenarios"
	"github.com/bootproof/bootproof/scenarios/fileformat"
)

// Calibration is a subject file's calibration section: the file describes
// one variant of bootproof's reconciler (package variant) whose truth is
// known, and, for a known-bad one, the scenarios able to see its defect.
// 'bootproof calibrate' runs such files in-process and measures
// bootproof's sensitivity and specificity on them.
type Calibration struct {
	// Variant is the variant's name (bootproof kmm --variant).
	Variant string `yaml:"variant"`
	// Sees lists, for a known-bad variant, the scenarios able to see its
	// defect: each group the assertion the defect must be caught through
	// (its expect) and why these scenarios can see it. A known-good (slow)
	// variant lists none: it must pass every scenario.
	Sees []SeesGroup `yaml:"sees"`
	// CaughtWhen is no longer accepted: a listed scenario catches the
	// defect only when the case fails through the assertion its group
	// names (an error verdict never catches anything). It is decoded
	// only to say so.
	CaughtWhen string `yaml:"caughtWhen"`

	variant variant.Variant
}

// SeesGroup is scenarios that can see a defect, for one reason.
type SeesGroup struct {
	// Scenarios are scenario names or globs; one that starts with "!"
	// takes the scenarios it names out of the group ("*",
	// "!nmc-deleted-while-loading": every scenario but that one).
	Scenarios []string `yaml:"scenarios"`
	// Expect is fail:<assertion>[,<assertion>...]: what the defect must
	// be caught through. Only a case observed failing through one of
	// them (its verdict then a pass: failed as expected) catches it; an
	// error, or a failure through another assertion, is a miss.
	Expect scenarios.Expectation `yaml:"expect"`
	// Why these scenarios can see the defect.
	Why string `yaml:"why"`
}

// Kind is the variant's kind: variant.Defect or variant.Slow.
func (c *Calibration) Kind() variant.Kind { return c.variant.Kind }

// Summary is the variant's one-line description.
func (c *Calibration) Summary() string { return c.variant.Summary }

// Listed returns the group of Sees listing scenario name, or nil.
func (c *Calibration) Listed(name string) *SeesGroup {
	for i := range c.Sees {
		if slices.Contains(c.Sees[i].Scenarios, name) {
			return &c.Sees[i]
		}
	}
	for i := range c.Sees {
		if c.Sees[i].matches(name) {
			return &c.Sees[i]
		}
	}
	return nil
}

// matches reports whether one of the group's patterns matches name and
// none of its exclusions ("!pattern") does.
func (g *SeesGroup) matches(name string) bool {
	in := false
	for _, p := range g.Scenarios {
		if ex, ok := strings.CutPrefix(p, "!"); ok {
			if m, _ := path.Match(ex, name); m {
				return false
			}
			continue
		}
		if m, _ := path.Match(p, name); m {
			in = true
		}
	}
	return in
}

// validate checks the section and, when the file has no expect mapping,
// derives the file's expectations from Sees: each listed scenario fails
// through its group's assertion, every other one passes.
func (f *File) validateCalibration(bad func(msg string, path ...string) *fileformat.FieldError) *fileformat.FieldError {
	c := f.Calibration
	if c == nil {
		return nil
	}
	v, ok := variant.Lookup(variant.Name(c.Variant))
	if !ok {
		return bad(fmt.Sprintf("%q: accepted: %s", c.Variant, strings.Join(variant.Names(), ", ")), "calibration", "variant")
	}
	c.variant = v
	if c.CaughtWhen != "" {
		return bad(fmt.Sprintf("%q: no longer accepted: a defect is caught only by a failure through the assertion its sees group names, never by an error; "+
			"remove caughtWhen and give each group expect: fail:<assertion> (a variant that never loads: fail:initial-load)", c.CaughtWhen), "calibration", "caughtWhen")
	}
	if v.Kind == variant.Slow && len(c.Sees) > 0 {
		return bad(fmt.Sprintf("variant %s is slow but correct: it must pass every scenario, so it lists none", v.Name), "calibration", "sees")
	}
	if v.Kind == variant.Defect && len(c.Sees) == 0 {
		return bad(fmt.Sprintf("variant %s has a defect: list the scenarios able to see it, with the assertion and why", v.Name), "calibration", "sees")
	}
	for i, g := range c.Sees {
		group := func(msg string, sub ...string) *fileformat.FieldError {
			e := bad(msg, append([]string{"calibration", "sees"}, sub...)...)
			e.Field = fmt.Sprintf("calibration.sees[%d]", i)
			if len(sub) > 0 {
				e.Field += "." + strings.Join(sub, ".")
			}
			return e
		}
		if len(g.Scenarios) == 0 {
			return group("list the scenarios (names or globs)", "scenarios")
		}
		for _, p := range g.Scenarios {
			p = strings.TrimPrefix(p, "!")
			if _, err := path.Match(p, ""); err != nil || p == "" {
				return group(fmt.Sprintf("%q: not a scenario name or glob (a leading ! takes it out of the group)", p), "scenarios")
			}
			if !matchesCatalog(p) {
				return group(fmt.Sprintf("%q matches no scenario of the catalog ('bootproof list' names them): a scenario listed but never run would be left out of the sensitivity unseen", p), "scenarios")
			}
		}
		switch {
		case g.Expect.Outcome == "":
			return group("the expectation is required: "+seesExpectSyntax, "expect")
		case g.Expect.Outcome != scenarios.Fail || len(g.Expect.Assertions) == 0:
			return group(fmt.Sprintf("%q: accepted: %s", g.Expect.String(), seesExpectSyntax), "expect")
		}
		if g.Why == "" {
			return group("say why these scenarios can see the defect", "why")
		}
	}
	if len(f.expect) > 0 {
		return bad("a calibration file's expectations come from calibration.sees: remove expect", "expect")
	}
	return nil
}

// seesExpectSyntax is what a sees group's expect accepts, for messages.
var seesExpectSyntax = "fail:<assertion>[,<assertion>...] with assertions " + strings.Join(scenarios.Judged, ", ") +
	" (what the defect must be caught through: only a failure through it is a catch, never an error)"

// matchesCatalog reports whether pattern names or matches a scenario of
// the catalog (true when the catalog cannot be read: running it fails
// then anyway, with that error).
func matchesCatalog(pattern string) bool {
	cat, err := scenarios.Catalog()
	if err != nil {
		return true
	}
	for _, s := range cat {
		if ok, _ := path.Match(pattern, s.Name); ok {
			return true
		}
	}
	return false
}

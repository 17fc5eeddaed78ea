package suite

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/driverguard/driverguard/finding"
)

// RuleCoverage is one rule with the cases that fired it and the cases that judged an object
// by it without it firing.
type RuleCoverage struct {
	// Rule is the rule's ID: a built-in rule, or one rule body of a policy (<package>.deny,
	// <package>.warn), each covered on its own (docs/policy-authoring.md "Test suites").
	Rule string `json:"rule"`
	// BuiltIn: a rule of the decision core, not a policy.
	BuiltIn bool `json:"builtIn,omitempty"`
	// Title, Home and Source are the registry's (finding.Rule).
	Title  string         `json:"title,omitempty"`
	Home   string         `json:"home,omitempty"`
	Source finding.Source `json:"source,omitempty"`
	Fired  []string       `json:"fired"`
	Passed []string       `json:"passed"`
}

// CheckPattern reports a pattern of --coverage-of or coverageOf that is not a glob
// (path.Match syntax).
func CheckPattern(pattern string) error {
	if strings.TrimSpace(pattern) == "" {
		return errors.New("an empty pattern: give a rule ID, a policy package or a glob such as driverguard.team.*")
	}
	if _, err := path.Match(pattern, ""); err != nil {
		return fmt.Errorf("%q is not a glob (path.Match syntax: * ? [a-z] \\): %w", pattern, err)
	}
	return nil
}

// MatchRule reports whether a pattern of --coverage-of or coverageOf (a glob, checked by
// CheckPattern) names a rule ID: the ID matches it, or the Rego package of a rule body does
// (a package names both its bodies), in full or without its driverguard. prefix, as
// --disable and --enforcement name policies (lib.pinned_version).
func MatchRule(pattern, rule string) bool {
	pkg := finding.PolicyOf(rule)
	names := []string{rule}
	if pkg != "" {
		names = append(names, pkg)
		if short, ok := strings.CutPrefix(rule, policyPrefix); ok {
			names = append(names, short, strings.TrimPrefix(pkg, policyPrefix))
		}
	}
	for _, n := range names {
		if ok, _ := path.Match(pattern, n); ok {
			return true
		}
	}
	return false
}

// policyPrefix is what --disable and --enforcement let a policy's name leave out.
const policyPrefix = "driverguard."

// MatchAny reports whether rule matches one of patterns (every rule when there are none).
func MatchAny(patterns []string, rule string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if MatchRule(p, rule) {
			return true
		}
	}
	return false
}

// Covered reports whether the rule fired in at least one case.
func (r *RuleCoverage) Covered() bool { return len(r.Fired) > 0 }

// Coverage collects, over the cases of every suite, which rules fired.
type Coverage struct {
	rules map[string]*RuleCoverage
}

// NewCoverage returns an empty Coverage.
func NewCoverage() *Coverage { return &Coverage{rules: map[string]*RuleCoverage{}} }

// Rules registers rules to cover: every rule registered counts, whether a case reaches it or
// not.
func (c *Coverage) Rules(rules []finding.Rule) {
	for _, r := range rules {
		if _, ok := c.rules[r.ID]; !ok {
			c.rules[r.ID] = &RuleCoverage{Rule: r.ID, BuiltIn: r.Source == finding.SourceBuiltin, Title: r.Title, Home: r.Home, Source: r.Source,
				Fired: []string{}, Passed: []string{}}
		}
	}
}

// Add records the outcome of the case named name: each registered rule that produced a result
// fired; each other rule the objects were judged by passed.
func (c *Coverage) Add(name string, out *Outcome) {
	fired := map[string]bool{}
	for _, r := range out.Results {
		fired[r.Rule] = true
	}
	for rule := range fired {
		if rc, ok := c.rules[rule]; ok && !last(rc.Fired, name) {
			rc.Fired = append(rc.Fired, name)
		}
	}
	if len(out.Objects) == 0 {
		return
	}
	for _, rule := range out.Rules {
		if rc, ok := c.rules[rule]; ok && !fired[rule] && !last(rc.Passed, name) {
			rc.Passed = append(rc.Passed, name)
		}
	}
}

// last reports whether name is the last of names: a case's outcome is added once, so a name
// already listed is the last one (a linear scan would make a run quadratic in its cases).
func last(names []string, name string) bool { return len(names) > 0 && names[len(names)-1] == name }

// Report lists the rules by name and the share of them that fired, in percent (100 when
// there are none).
func (c *Coverage) Report() ([]RuleCoverage, float64) {
	out := make([]RuleCoverage, 0, len(c.rules))
	covered := 0
	for _, rc := range c.rules {
		out = append(out, *rc)
		if rc.Covered() {
			covered++
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].BuiltIn != out[j].BuiltIn {
			return !out[i].BuiltIn
		}
		return out[i].Rule < out[j].Rule
	})
	if len(out) == 0 {
		return out, 100
	}
	return out, 100 * float64(covered) / float64(len(out))
}

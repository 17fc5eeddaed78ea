package action

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/suite"
)

// BuiltInRules are the rules of the decision core a suite's coverage counts (suite.BuiltInRules).
var BuiltInRules = suite.BuiltInRules

// builtInRules are the registry's BuiltInRules.
func builtInRules() []finding.Rule {
	reg := finding.NewRegistry()
	out := make([]finding.Rule, 0, len(BuiltInRules))
	for _, id := range BuiltInRules {
		r, ok := reg.Rule(id)
		if !ok {
			r = finding.Rule{ID: id, Title: id, Source: finding.SourceBuiltin}
		}
		out = append(out, r)
	}
	return out
}

// ruleIDs are the IDs of known: the policies' rule bodies first, then the built-in rules.
func ruleIDs(known map[string]bool) []string {
	builtIn := func(id string) int {
		if finding.PolicyOf(id) == "" {
			return 1
		}
		return 0
	}
	return slices.SortedFunc(maps.Keys(known), func(a, b string) int {
		return cmp.Or(cmp.Compare(builtIn(a), builtIn(b)), cmp.Compare(a, b))
	})
}

// checkCoverageOf reports the first of patterns (of where) that matches none of the rules.
func checkCoverageOf(where string, patterns, rules []string) error {
	for _, p := range patterns {
		if !slices.ContainsFunc(rules, func(r string) bool { return suite.MatchRule(p, r) }) {
			return fmt.Errorf("%s %q matches no rule coverage counts; the rules are %s (a glob on rule IDs such as driverguard.team.*, or a policy package for its deny and warn; driverguard policy list shows them)",
				where, truncateValue(p), capList(rules))
		}
	}
	return nil
}

// countRules registers with cov the rules of a suite coverage counts: its policies' rules and
// the built-in ones that its coverageOf (each checked against them, at its line) and
// --coverage-of name. Every rule it could count is added to known.
func (t *Test) countRules(s *suite.Suite, rules []finding.Rule, cov *suite.Coverage, known map[string]bool) error {
	counted := append(rules, builtInRules()...)
	ids := map[string]bool{}
	for _, r := range counted {
		ids[r.ID] = true
		known[r.ID] = true
	}
	scope := make([]string, 0, len(s.CoverageOf))
	for _, p := range s.CoverageOf {
		if err := checkCoverageOf("coverageOf", []string{p.Value}, ruleIDs(ids)); err != nil {
			return &suite.Error{File: s.File, Line: p.Line, Msg: err.Error()}
		}
		scope = append(scope, p.Value)
	}
	for _, r := range counted {
		if suite.MatchAny(scope, r.ID) && suite.MatchAny(t.CoverageOf, r.ID) {
			cov.Rules([]finding.Rule{r})
		}
	}
	return nil
}

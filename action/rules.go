package action

import (
	"github.com/driverguard/driverguard/finding"
)

// builtinRules are the built-in rules of the registry.
var builtinRules = finding.NewRegistry()

// RuleDescription is a rule's one-line description: a built-in rule's title (finding.Builtin),
// else that of the Rego policy the rule names.
func RuleDescription(rule string) string {
	if r, ok := builtinRules.Rule(rule); ok {
		return r.Title
	}
	if pkg := finding.PolicyOf(rule); pkg != "" {
		return "Rego policy " + pkg + " (" + finding.BodyOf(rule) + ")"
	}
	return "Rego policy " + rule
}

// DriftRules are the drift kinds: what is wrong with the nodes now, whatever a change does.
var DriftRules = []string{finding.RuleUnowned, finding.RuleConflictingNodeSelector, finding.RuleDriverFamilyLabelMissing,
	finding.RuleInvalidImageTag, finding.RuleStaleOwnerLabel}

// Rules is the registry of a run: the built-in rules and the rule bodies of the policy
// packages evaluated.
func Rules(packages []string) *finding.Registry {
	r := finding.NewRegistry()
	for _, pkg := range packages {
		for _, body := range []string{finding.BodyDeny, finding.BodyWarn} {
			id := finding.RegoRule(pkg, body)
			r.Add(finding.Rule{ID: id, Level: finding.Level(body), Enforcement: finding.Deny, Title: RuleDescription(id), Home: pkg, Source: finding.SourcePolicy})
		}
	}
	return r
}

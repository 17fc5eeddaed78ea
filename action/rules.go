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

// DriftRules are the drift kinds: what is wrong with the nodes now, whatever a change does
// (finding.DriftRules).
var DriftRules = finding.DriftRules

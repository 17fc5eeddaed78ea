package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Enforcement is what a policy's messages do (SPEC §9): a deny message of a `deny` policy
// denies; a `warn` policy's deny messages are warnings; an `audit` policy's messages change
// no verdict and no exit code — they are reported by the audit and listed, labelled, by
// `check`. A package declares it in its METADATA (`custom.enforcement`); the caller
// (Options.Enforcement: serve's and check's --enforcement, the chart's
// webhook.policy.enforcement) may override it per package.
type Enforcement string

const (
	EnforceDeny  Enforcement = "deny"
	EnforceWarn  Enforcement = "warn"
	EnforceAudit Enforcement = "audit"
)

// Enforcements are the modes, in the order they are listed.
var Enforcements = []Enforcement{EnforceDeny, EnforceWarn, EnforceAudit}

// ParseEnforcement reads a mode.
func ParseEnforcement(s string) (Enforcement, error) {
	if e := Enforcement(s); slices.Contains(Enforcements, e) {
		return e, nil
	}
	return "", fmt.Errorf("enforcement %q is not one of deny, warn, audit", s)
}

// enforcementOf reads the package-scoped METADATA `custom.enforcement` of m, "" when it
// declares none.
func enforcementOf(m *ast.Module) (Enforcement, *Problem) {
	for _, a := range m.Annotations {
		if a.Scope != "package" || a.Custom == nil {
			continue
		}
		v, ok := a.Custom["enforcement"]
		if !ok {
			continue
		}
		s, _ := v.(string)
		e, err := ParseEnforcement(s)
		if err != nil {
			p := problemAt(a.Location, "package %s: METADATA custom.enforcement: %v; write `enforcement: audit` to trial a rule, `warn` to warn, `deny` (the default) to deny", quoteName(strings.TrimPrefix(m.Package.Path.String(), "data.")), enforcementValueError(v))
			return "", &p
		}
		return e, nil
	}
	return "", nil
}

func enforcementValueError(v any) error {
	if s, ok := v.(string); ok {
		_, err := ParseEnforcement(s)
		return err
	}
	return fmt.Errorf("enforcement is a %T, not one of deny, warn, audit", v)
}

// resolveEnforcement applies the caller's modes (by package name, as --disable takes them) to
// pkgs.
func resolveEnforcement(pkgs []policyPackage, modes map[string]Enforcement, origin string) []Problem {
	var problems []Problem
	for _, n := range sortedKeys(modes) {
		mode := modes[n]
		if !slices.Contains(Enforcements, mode) {
			problems = append(problems, Problem{File: origin, Message: fmt.Sprintf("enforcement of %q: %q is not one of deny, warn, audit", quoteName(n), string(mode))})
			continue
		}
		i := slices.IndexFunc(pkgs, func(p policyPackage) bool { return p.name == n || p.pkg == n })
		if i < 0 {
			problems = append(problems, Problem{File: origin, Message: fmt.Sprintf("cannot set the enforcement of %q: no policy has that name; the policies are %s", quoteName(n), knownPolicies(pkgs))})
			continue
		}
		pkgs[i].enforcement = mode
	}
	return problems
}

// route files a policy's message by its package's enforcement.
func (d *Decision) route(m Message, mode Enforcement) {
	switch {
	case mode == EnforceAudit:
		m.Enforcement = EnforceAudit
		d.Audit = append(d.Audit, m)
	case mode == EnforceWarn && m.Rule == "deny":
		m.Enforcement = EnforceWarn
		d.Warn = append(d.Warn, m)
	case m.Rule == "deny":
		d.Deny = append(d.Deny, m)
	default:
		d.Warn = append(d.Warn, m)
	}
}

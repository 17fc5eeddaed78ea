package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Enforcement is what a policy rule's messages do (docs/audit.md "Trial a rule: enforcement"): a deny rule in `deny` denies; in
// `warn` its messages are warnings; a rule in `audit` changes no verdict and no exit code —
// its messages are reported by the audit and listed, labelled, by `check`. A warn rule warns
// in `deny` and `warn`. Each rule (a package's deny, its warn) has one: declared in METADATA
// `custom.enforcement` above the rule (scope rule or document), on its package, or on a
// package above (scope subpackages) — the nearest wins, deny by default (see ruleModes); the
// caller (Options.Enforcement: serve's and check's --enforcement, the chart's
// webhook.policy.enforcement) may set it per package, for all its rules.
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

// declaredMode is an enforcement declared in METADATA, or the default: its mode, where it
// is declared and how a message names that.
type declaredMode struct {
	mode Enforcement
	loc  *ast.Location
	// how: "METADATA above it", "METADATA scope: document", "the package's METADATA",
	// "METADATA scope: subpackages of <package>", "the default".
	how string
}

// ruleModes sets the enforcement of every deny and warn rule of pkgs (p.modes) from the
// METADATA `custom.enforcement` of modules, as OPA chains annotations: the rule's own (scope
// rule, the default above a rule), the rule's document (scope document: every body of that
// rule name in the package), the package's (scope package, in any file of it), the nearest
// package at or above it that declares one for its subpackages (scope subpackages); deny
// otherwise.
//
// An enforcement is one per rule (a package's deny, its warn): the bodies of one rule whose
// chains give different modes are a problem at the body that differs, since driverguard
// cannot tell which body produced a message. So are a value that is not a mode, wherever it
// is declared, and a declaration that applies to no deny or warn rule.
func ruleModes(modules map[string]*ast.Module, pkgs map[string]*policyPackage) []Problem {
	var problems []Problem
	ruleScope := map[*ast.Rule]declaredMode{}
	docScope := map[[2]string]declaredMode{} // by package and rule name
	pkgScope := map[string]declaredMode{}
	subScope := map[string]declaredMode{}
	for _, key := range sortedKeys(modules) {
		m := modules[key]
		pkg := strings.TrimPrefix(m.Package.Path.String(), "data.")
		if !strings.HasPrefix(pkg, policyNamespace+".") {
			continue // checkNamespaces refuses the module
		}
		for _, a := range m.Annotations {
			v, ok := a.Custom["enforcement"]
			if !ok {
				continue
			}
			var rule *ast.Rule
			var name, what string
			switch a.Scope {
			case "rule", "document":
				if rule = ast.NewAnnotationsRef(a).GetRule(); rule == nil {
					continue
				}
				name = rule.Head.Ref().String()
				what = fmt.Sprintf("rule %s of package %s", quoteName(name), quoteName(pkg))
				if a.Scope == "document" {
					what += " (scope document)"
				}
			case "package":
				what = "package " + quoteName(pkg)
			case "subpackages":
				what = "packages under " + quoteName(pkg) + " (scope subpackages)"
			default:
				continue
			}
			mode, err := parseEnforcementValue(v)
			if err != nil {
				problems = append(problems, problemAt(a.Location, "%s: METADATA custom.enforcement: %v; write `enforcement: audit` to trial a rule, `warn` to warn, `deny` (the default) to deny", what, err))
				continue
			}
			d := declaredMode{mode: mode, loc: a.Location}
			switch a.Scope {
			case "rule", "document":
				if p := pkgs[pkg]; p == nil || len(p.bodies[name]) == 0 {
					if name == "deny" || name == "warn" {
						continue // not a message set: policyPackages reports it
					}
					problems = append(problems, problemAt(a.Location, "%s: METADATA custom.enforcement does nothing here: only a package's deny and warn rules have an enforcement; put it above deny or warn, or on the package", what))
					continue
				}
				if a.Scope == "document" {
					d.how = "METADATA scope: document"
					docScope[[2]string{pkg, name}] = d
					continue
				}
				d.how = "METADATA above it"
				// Blocks stacked above one rule: the nearest one says.
				if prev, ok := ruleScope[rule]; !ok || prev.loc.Row < d.loc.Row {
					ruleScope[rule] = d
				}
			case "package":
				if pkgs[pkg] == nil {
					problems = append(problems, problemAt(a.Location, "%s: METADATA custom.enforcement does nothing here: the package has no deny or warn rule", what))
					continue
				}
				if prev, ok := pkgScope[pkg]; ok && prev.mode != mode {
					problems = append(problems, problemAt(a.Location, "package %s: METADATA custom.enforcement is %s here and %s in another file of the package; declare it once", quoteName(pkg), mode, prev.mode))
					continue
				}
				d.how = "the package's METADATA"
				pkgScope[pkg] = d
			case "subpackages":
				under := false
				for p := range pkgs {
					under = under || p == pkg || strings.HasPrefix(p, pkg+".")
				}
				if !under {
					problems = append(problems, problemAt(a.Location, "%s: METADATA custom.enforcement does nothing here: no package at or under it has a deny or warn rule", what))
					continue
				}
				d.how = "METADATA scope: subpackages of " + quoteName(pkg)
				subScope[pkg] = d
			}
		}
	}
	chain := func(body *ast.Rule, pkg, name string) declaredMode {
		if d, ok := ruleScope[body]; ok {
			return d
		}
		if d, ok := docScope[[2]string{pkg, name}]; ok {
			return d
		}
		if d, ok := pkgScope[pkg]; ok {
			return d
		}
		for p := pkg; p != ""; p = p[:max(strings.LastIndexByte(p, '.'), 0)] {
			if d, ok := subScope[p]; ok {
				return d
			}
		}
		return declaredMode{mode: EnforceDeny, how: "the default"}
	}
	for _, pkg := range sortedKeys(pkgs) {
		p := pkgs[pkg]
		p.modes = make(map[string]Enforcement, len(p.rules))
		for _, name := range p.rules {
			bodies := p.bodies[name]
			first := chain(bodies[0], pkg, name)
			p.modes[name] = first.mode
			for _, body := range bodies[1:] {
				if d := chain(body, pkg, name); d.mode != first.mode {
					problems = append(problems, problemAt(body.Location, "package %s: this %s rule's enforcement is %s (%s) but the %s rule at %s is %s (%s): driverguard applies one enforcement to all of a rule's messages; annotate every %s rule of the package alike, or declare it once with \"scope: document\" above one of them (it covers every %s rule of the package) or for the package",
						quoteName(pkg), name, d.mode, d.how, name, placeFrom(bodies[0].Location, body.Location), first.mode, first.how, name, name))
					break
				}
			}
		}
	}
	return problems
}

// placeFrom names where loc is, seen from from: "line N" in the same file, else "file:N".
func placeFrom(loc, from *ast.Location) string {
	if loc == nil {
		return "another place"
	}
	if from != nil && from.File == loc.File {
		return fmt.Sprintf("line %d", loc.Row)
	}
	return fmt.Sprintf("%s:%d", loc.File, loc.Row)
}

// parseEnforcementValue reads a METADATA custom.enforcement value.
func parseEnforcementValue(v any) (Enforcement, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("enforcement is a %T, not one of deny, warn, audit", v)
	}
	return ParseEnforcement(s)
}

// resolveEnforcement applies the caller's modes (by package name, as --disable takes them) to
// pkgs: a package's mode is every one of its rules' mode, whatever their METADATA says.
func resolveEnforcement(pkgs []policyPackage, modes map[string]Enforcement, origin string) []Problem {
	var problems []Problem
	setBy := map[int]string{} // the name each package's mode was set by
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
		if other, ok := setBy[i]; ok && modes[other] != mode {
			problems = append(problems, Problem{File: origin, Message: fmt.Sprintf("the enforcement of %s is set twice, %s by %q and %s by %q: give the policy one enforcement",
				pkgs[i].pkg, modes[other], quoteName(other), mode, quoteName(n))})
			continue
		}
		setBy[i] = n
		for rule := range pkgs[i].modes {
			pkgs[i].modes[rule] = mode
		}
	}
	return problems
}

// route files a policy's message by its rule's enforcement.
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

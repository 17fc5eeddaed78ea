package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/driverguard/driverguard/finding"
)

// LibraryDir is where the bundled library's files are in driverguard's repository: the
// home of a library rule is <LibraryDir>/<file>.rego:<line>.
const LibraryDir = "policy/library"

// ruleBodies are the registry's rules of pkgs (docs/output.md "A finding", docs/rules.md): one per rule body a package
// defines (its deny, its warn), with what the enforcement configured for it makes of its
// findings (METADATA custom.enforcement, the caller's --enforcement), disabled when the
// package is off, titled by its METADATA and homed at the body's first definition.
func ruleBodies(pkgs []policyPackage, modules map[string]*ast.Module, disabled map[string]bool) []finding.Rule {
	var out []finding.Rule
	for _, p := range pkgs {
		for _, body := range p.rules {
			first := p.bodies[body][0]
			source := finding.SourcePolicy
			if strings.HasPrefix(first.Location.File, bundledPrefix) {
				source = finding.SourceLibrary
			}
			// What the body's findings do (as Decision.route files them): a warn body warns
			// whatever its policy's enforcement unless the policy is on trial.
			enforcement := finding.Level(p.modes[body])
			if body == finding.BodyWarn && enforcement == finding.Deny {
				enforcement = finding.Warn
			}
			out = append(out, finding.Rule{
				ID:          finding.RegoRule(p.pkg, body),
				Level:       finding.Level(body),
				Enforcement: enforcement,
				Title:       ruleTitle(&p, body, first, modules),
				Home:        ruleHome(first.Location),
				Source:      source,
				Disabled:    disabled[p.pkg],
			})
		}
	}
	return out
}

// ruleHome is file:line of a rule body: a library file by its path in the repository.
func ruleHome(loc *ast.Location) string {
	if loc == nil {
		return ""
	}
	file := loc.File
	if name, ok := strings.CutPrefix(file, bundledPrefix); ok {
		file = path.Join(LibraryDir, name)
	}
	return fmt.Sprintf("%s:%d", file, loc.Row)
}

// ruleTitle is a rule body's title: the METADATA title (else the first line of the
// description) above the body or of the rule's document, else the package's, else "Rego
// policy <package> (<body>)".
func ruleTitle(p *policyPackage, body string, first *ast.Rule, modules map[string]*ast.Module) string {
	var own, docTitle, pkgTitle string
	for _, key := range sortedKeys(modules) {
		m := modules[key]
		if strings.TrimPrefix(m.Package.Path.String(), "data.") != p.pkg {
			continue
		}
		for _, a := range m.Annotations {
			t := annotationTitle(a)
			if t == "" {
				continue
			}
			switch a.Scope {
			case "rule":
				if r := ast.NewAnnotationsRef(a).GetRule(); r == first && own == "" {
					own = t
				}
			case "document":
				if r := ast.NewAnnotationsRef(a).GetRule(); r != nil && r.Head.Ref().String() == body && docTitle == "" {
					docTitle = t
				}
			case "package":
				if pkgTitle == "" {
					pkgTitle = t
				}
			}
		}
	}
	for _, t := range []string{own, docTitle, pkgTitle} {
		if t != "" {
			return t
		}
	}
	return fmt.Sprintf("Rego policy %s (%s)", p.pkg, body)
}

// annotationTitle is an annotation's title, else the first line of its description.
func annotationTitle(a *ast.Annotations) string {
	if t := strings.TrimSpace(a.Title); t != "" {
		return t
	}
	line, _, _ := strings.Cut(strings.TrimSpace(a.Description), "\n")
	return strings.TrimSpace(line)
}

// Rules are the registry's rules of the active policy set (docs/rules.md): every rule body of
// every policy package, disabled ones included, sorted by ID. finding.NewRegistry(e.Rules()...)
// adds the built-in rules.
func (e *Engine) Rules() []finding.Rule {
	return slices.Clone(e.active.Load().rules)
}

// LibraryRules are the registry's rules of the bundled library, as an engine with the
// library and no directory has them.
func LibraryRules() ([]finding.Rule, error) {
	lib, err := library()
	if err != nil {
		return nil, fmt.Errorf("policy: the bundled library does not parse: %w", err)
	}
	checked, err := checkSet(lib.policies, &parsed{modules: map[string]*ast.Module{}, data: map[string]any{}, dataFiles: map[string]string{}}, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	return ruleBodies(checked.pkgs, checked.modules, checked.disabled), nil
}

// helperModules are the modules of lib whose package defines no deny or warn rule: the
// library's helpers (driverguard.lib.util), which user policies import and which stay
// loaded when the library's rules are left out (Options.ExcludeLibrary).
func helperModules(lib map[string]*ast.Module) map[string]*ast.Module {
	pkgs, _ := policyPackages(lib)
	out := map[string]*ast.Module{}
	for key, m := range lib {
		pkg := strings.TrimPrefix(m.Package.Path.String(), "data.")
		if !slices.ContainsFunc(pkgs, func(p policyPackage) bool { return p.pkg == pkg }) {
			out[key] = m
		}
	}
	return out
}

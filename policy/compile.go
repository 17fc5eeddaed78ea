package policy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/finding"
)

const (
	// policyNamespace is the root of every policy package (docs/policy-authoring.md "2. Write a rule").
	policyNamespace = "driverguard"
	// decisionPackage holds the generated aggregation of every policy's deny and warn.
	decisionPackage = "driverguard_engine"
	decisionQuery   = "data." + decisionPackage + ".decision"
	decisionFile    = "driverguard:decision.rego"
)

// unsafeBuiltins are refused in policies, at load time with file and line: a policy is a pure
// function of input and data, so that `check` in CI and the webhook at admission reach the
// same verdict, and evaluation stays fast. They are every builtin OPA marks non-deterministic
// (the network: http.send, net.lookup_ip_addr, remote schemas; the clock: time.now_ns and the
// JWT builtins that read it; randomness: rand.intn, uuid.rfc4122; the environment:
// opa.runtime) and the certificate verifications that judge validity by the current time.
var unsafeBuiltins = func() map[string]struct{} {
	m := map[string]struct{}{
		"crypto.x509.parse_and_verify_certificates":              {},
		"crypto.x509.parse_and_verify_certificates_with_options": {},
	}
	for _, b := range ast.Builtins {
		if b.Nondeterministic {
			m[b.Name] = struct{}{}
		}
	}
	return m
}()

// policyPackage is a package under driverguard. that declares deny and/or warn.
type policyPackage struct {
	// pkg is the package path without data., e.g. driverguard.lib.pinned_version.
	pkg string
	// name is pkg without driverguard., e.g. lib.pinned_version: the name used to disable it.
	name  string
	ref   ast.Ref
	rules []string // deny, warn (sorted, each once)
	// title is the package's METADATA title, file the first module that declares it.
	title, file string
	// kinds are the object kinds the package's rules can apply to, nil for any: every
	// deny/warn rule of the package requires `input.object.kind == "<kind>"`.
	kinds []string
	// anyKind is set once a rule without such a requirement is found.
	anyKind bool
	// bodies are the rules of each of deny and warn (a rule name may have several bodies,
	// in several files).
	bodies map[string][]*ast.Rule
	// modes are the enforcement of deny and warn (METADATA custom.enforcement, or the
	// caller's for the package).
	modes map[string]Enforcement
}

// enforcement is the package's enforcement as PolicyInfo shows it: its deny rule's, or its
// warn rule's when it has no deny rule.
func (p *policyPackage) enforcement() Enforcement {
	if m, ok := p.modes["deny"]; ok {
		return m
	}
	return p.modes["warn"]
}

// requiredKind returns the kind a rule body requires with a top-level
// `input.object.kind == "<kind>"` expression, or "" when it requires none.
func requiredKind(r *ast.Rule) string {
	kindRef := ast.MustParseRef("input.object.kind")
	for _, e := range r.Body {
		if e.Negated || len(e.With) > 0 || !e.IsEquality() && !e.IsCall() {
			continue
		}
		terms, ok := e.Terms.([]*ast.Term)
		if !ok || len(terms) != 3 {
			continue
		}
		if op := terms[0].String(); op != "eq" && op != "equal" {
			continue
		}
		for _, pair := range [][2]*ast.Term{{terms[1], terms[2]}, {terms[2], terms[1]}} {
			ref, ok := pair[0].Value.(ast.Ref)
			s, isStr := pair[1].Value.(ast.String)
			if ok && isStr && ref.Equal(kindRef) {
				return string(s)
			}
		}
	}
	return ""
}

// policyPackages finds the policy packages of modules, sorted by package, with the
// enforcement of each of their rules (ruleModes), and the problems of deny/warn rules that are
// not message sets and of METADATA custom.enforcement.
func policyPackages(modules map[string]*ast.Module) ([]policyPackage, []Problem) {
	byPkg := map[string]*policyPackage{}
	var problems []Problem
	for _, key := range sortedKeys(modules) {
		m := modules[key]
		path := m.Package.Path
		if len(path) < 2 || !path[1].Equal(ast.InternedTerm(policyNamespace)) {
			continue
		}
		for _, r := range m.Rules {
			ref := r.Head.Ref()
			rule, ok := ref[0].Value.(ast.Var)
			if !ok || (rule != "deny" && rule != "warn") {
				continue
			}
			if len(ref) != 1 || len(r.Head.Args) != 0 || r.Head.RuleKind() != ast.MultiValue {
				problems = append(problems, problemAt(r.Location, "%s must collect messages as a set: write `%s contains msg if { ... }`", rule, rule))
				continue
			}
			pkg := strings.TrimPrefix(path.String(), "data.")
			p := byPkg[pkg]
			if p == nil {
				p = &policyPackage{pkg: pkg, name: strings.TrimPrefix(pkg, policyNamespace+"."), ref: path, file: key, bodies: map[string][]*ast.Rule{}}
				byPkg[pkg] = p
			}
			for _, a := range m.Annotations {
				if a.Scope == "package" && a.Title != "" && p.title == "" {
					p.title = a.Title
				}
			}
			p.bodies[string(rule)] = append(p.bodies[string(rule)], r)
			if k := requiredKind(r); k == "" {
				p.anyKind = true
			} else if !slices.Contains(p.kinds, k) {
				p.kinds = append(p.kinds, k)
			}
			if !slices.Contains(p.rules, string(rule)) {
				p.rules = append(p.rules, string(rule))
				slices.Sort(p.rules)
			}
		}
	}
	problems = append(problems, ruleModes(modules, byPkg)...)
	out := make([]policyPackage, 0, len(byPkg))
	for _, k := range sortedKeys(byPkg) {
		p := byPkg[k]
		if p.anyKind {
			p.kinds = nil
		}
		slices.Sort(p.kinds)
		out = append(out, *p)
	}
	return out, problems
}

func lastSegment(pkg string) string {
	return pkg[strings.LastIndexByte(pkg, '.')+1:]
}

// checkNamespaces reports user modules outside driverguard. and in the namespaces driverguard
// reserves.
func checkNamespaces(modules map[string]*ast.Module) []Problem {
	var problems []Problem
	for _, key := range sortedKeys(modules) {
		m := modules[key]
		pkg := strings.TrimPrefix(m.Package.Path.String(), "data.")
		switch {
		case !strings.HasPrefix(pkg, policyNamespace+"."):
			last := lastSegment(pkg)
			problems = append(problems, problemAt(m.Package.Location, "package %s: driverguard evaluates only packages under %s., so this module would never run; rename it, e.g. package %s.%s (tests: %s.%s_test)",
				quoteName(pkg), policyNamespace, policyNamespace, quoteName(last), policyNamespace, quoteName(strings.TrimSuffix(last, "_test"))))
		case pkg == LibraryNamespace || strings.HasPrefix(pkg, LibraryNamespace+"."):
			problems = append(problems, problemAt(m.Package.Location, "package %s: %s is reserved for the bundled library; name your package after your team, e.g. %s.platform", quoteName(pkg), LibraryNamespace, policyNamespace))
		case pkg == decisionPackage || strings.HasPrefix(pkg, decisionPackage+"."):
			problems = append(problems, problemAt(m.Package.Location, "package %s is reserved for driverguard's decision", quoteName(pkg)))
		}
	}
	return problems
}

// resolveDisabled maps disable names (lib.pinned_version or driverguard.lib.pinned_version) to
// policy packages. origin names where the names came from, for messages.
func resolveDisabled(pkgs []policyPackage, names []string, origin string) (map[string]bool, []Problem) {
	disabled := map[string]bool{}
	var problems []Problem
	for _, n := range names {
		i := slices.IndexFunc(pkgs, func(p policyPackage) bool { return p.name == n || p.pkg == n })
		if i < 0 {
			problems = append(problems, Problem{File: origin, Message: fmt.Sprintf("cannot disable %q: no policy has that name; the policies are %s", quoteName(n), knownPolicies(pkgs))})
			continue
		}
		disabled[pkgs[i].pkg] = true
	}
	return disabled, problems
}

// maxKnownPolicies bounds the policy names a problem lists, each cut to
// validation.MaxQuotedValue: the problem stays within MaxProblemBytes.
const maxKnownPolicies = 10

// knownPolicies lists the names of the first maxKnownPolicies of pkgs and says how many
// there are in all when there are more.
func knownPolicies(pkgs []policyPackage) string {
	names := make([]string, 0, min(len(pkgs), maxKnownPolicies))
	for _, p := range pkgs[:min(len(pkgs), maxKnownPolicies)] {
		names = append(names, validation.Truncate(p.name, validation.MaxQuotedValue))
	}
	if len(pkgs) > maxKnownPolicies {
		return fmt.Sprintf("%s, ... (%d in all; driverguard policy list shows them)", strings.Join(names, ", "), len(pkgs))
	}
	return strings.Join(names, ", ")
}

// Object kinds with decisions of their own: a package whose rules all require one of them is
// left out of the others' decisions.
var decisionKinds = []string{driverKind, "RBLNClusterPolicy"}

// decisionModule generates the query module: one multi-value rule per object kind of
// decisionKinds (decision_<kind>) and one for every kind (decision), each holding a copy of
// the body of every deny and warn rule of the enabled policies that can apply, with the head
// [<policy package>, "deny"|"warn", <message>]. compiled is a compiler that has
// compiled the policies: the bodies are copied from its rules, whose refs are already
// resolved (imports, package-local names), so each body reads exactly what the original does.
//
// One rule instead of a ref per policy's deny and warn: OPA evaluates every rule set a
// query refers to as a virtual document of its own (rule lookup, a child evaluation, the
// result cached), a fixed cost of several microseconds per set on every request whatever
// the set's rules do. The bodies of one rule share one such evaluation, and OPA's rule index
// still skips, without evaluating them, the bodies whose `input.object.kind == "<kind>"`
// does not match. The policies' own deny and warn rules stay as they are (`policy test`, and
// rules that read another rule's messages, use them).
func decisionModule(pkgs []policyPackage, skippable []string, compiled *ast.Compiler) (*ast.Module, error) {
	pkgRef := ast.Ref{ast.DefaultRootDocument, ast.StringTerm(decisionPackage)}
	m := &ast.Module{Package: &ast.Package{Path: pkgRef, Location: ast.NewLocation(nil, decisionFile, 1, 1)}}
	type variant struct {
		kind string
		mask int
	}
	variants := []variant{{kind: ""}}
	for _, kind := range decisionKinds {
		variants = append(variants, variant{kind: kind})
	}
	for mask := 1; mask < 1<<len(skippable); mask++ {
		variants = append(variants, variant{driverKind, mask})
	}
	for _, vr := range variants {
		kind := vr.kind
		name := decisionRuleName(kind, vr.mask)
		bodies := 0
		for _, p := range pkgs {
			if !p.appliesTo(kind) || skipped(skippable, vr.mask, p.pkg) {
				continue
			}
			for _, rule := range p.rules {
				for _, r := range compiled.GetRules(p.ref.Append(ast.StringTerm(rule))) {
					if r.Head.Key == nil || len(r.Head.Args) != 0 || r.Else != nil {
						return nil, fmt.Errorf("%s.%s at %s is not a message set rule", p.pkg, rule, r.Location)
					}
					d := decisionRule(m, name, ast.ArrayTerm(ast.StringTerm(p.pkg), ast.StringTerm(rule), r.Head.Key.Copy()), r.Body.Copy())
					d.Location, d.Head.Location = r.Location, r.Head.Location
					m.Rules = append(m.Rules, d)
					bodies++
				}
			}
		}
		if bodies == 0 {
			// a set with no member: the decision is empty, never undefined
			none := ast.ArrayTerm(ast.StringTerm(""), ast.StringTerm(""), ast.StringTerm(""))
			m.Rules = append(m.Rules, decisionRule(m, name, none, ast.NewBody(ast.NewExpr(ast.BooleanTerm(false)))))
		}
	}
	return m, nil
}

// decisionRuleName names the decision of kind ("" for every kind) without the skippable
// packages of mask.
func decisionRuleName(kind string, mask int) string {
	name := "decision"
	if kind != "" {
		name += "_" + kind
	}
	if mask != 0 {
		name += fmt.Sprintf("_skip%d", mask)
	}
	return name
}

// skipped reports whether pkg is one of the skippable packages of mask.
func skipped(skippable []string, mask int, pkg string) bool {
	i := slices.Index(skippable, pkg)
	return i >= 0 && mask&(1<<i) != 0
}

// decisionRule is `<name> contains <key> if { <body> }` in module m.
func decisionRule(m *ast.Module, name string, key *ast.Term, body ast.Body) *ast.Rule {
	head := ast.RefHead(ast.Ref{ast.VarTerm(name)})
	head.Key = key
	return &ast.Rule{Head: head, Body: body, Module: m}
}

// appliesTo reports whether the package's rules can apply to objects of kind ("" for every
// kind).
func (p *policyPackage) appliesTo(kind string) bool {
	return kind == "" || p.kinds == nil || slices.Contains(p.kinds, kind)
}

// kindQuery is the prepared decision of one object kind and the packages it lists.
type kindQuery struct {
	query    rego.PreparedEvalQuery
	packages []string
	// modes are the enforcements of the packages' rules (deny, warn), by package index.
	modes []map[string]Enforcement
}

// policySet is one compiled, immutable set of policies ready for concurrent evaluation.
type policySet struct {
	// query decides objects of any kind; byKind those of decisionKinds.
	query  kindQuery
	byKind map[string]kindQuery
	// store holds the data documents of the policy directories and the cluster view
	// (data.driverguard_cluster), which the engine keeps current in the active set's store.
	store    storage.Store
	policies []string // evaluated packages, sorted: the decision's order
	// readsRouting is whether a rule the decision depends on reads input.routing.
	readsRouting bool
	// guarded is set when every policy that reads input.routing is a bundled rule with a
	// routing guard (guards): routing is handed to OPA only when one holds.
	guarded bool
	guards  []routingGuard
	// skippable are the packages with an object guard (objectGuards); skips[mask] decides an
	// RBLNDriver without the packages of mask (bit i: skippable[i]). families are the lowercase
	// families of the defaults and data.driverguard_config.known_families, for the guards.
	skippable []string
	skips     map[int]kindQuery
	families  map[string]bool
	// inputReads is the part of input a rule of the decision, the object guards or the choice
	// of the prepared query (input.object.kind) can read: the rest is never converted.
	inputReads *readTree
	// readsNodes is whether one reads data.driverguard_cluster.nodes: the store holds the
	// nodes only then.
	readsNodes bool
	// nodeLabels are the node label keys the policies declare (METADATA custom.nodeLabels).
	nodeLabels []string
	disabled   []string // disabled packages, sorted
	files      []string // user module and data files, sorted
	infos      []PolicyInfo
	// rules are the registry's rules of every policy package (disabled ones too), by ID.
	rules []finding.Rule
}

// PolicyInfo describes one policy of the active set.
type PolicyInfo struct {
	// Package is the Rego package, e.g. driverguard.lib.pinned_version.
	Package string `json:"package"`
	// Name is what --disable takes, e.g. lib.pinned_version.
	Name string `json:"name"`
	// Rules are deny and/or warn.
	Rules []string `json:"rules"`
	// Title is the package's METADATA title, if any.
	Title string `json:"title,omitempty"`
	// File declares the package (bundled:<file> for the library).
	File     string `json:"file"`
	Disabled bool   `json:"disabled"`
	// Enforcement is deny, warn or audit: its deny rule's (its warn rule's when it has no
	// deny rule); RuleEnforcement has each rule's.
	Enforcement Enforcement `json:"enforcement"`
	// RuleEnforcement is the enforcement of each of its rules, by name (deny, warn).
	RuleEnforcement map[string]Enforcement `json:"ruleEnforcement"`
}

// newCompiler returns the compiler every policy set and test run uses.
func newCompiler() *ast.Compiler {
	// WithUnsafeBuiltins, not capabilities without them: its error names the builtin as
	// refused ("unsafe built-in function calls in expression: time.now_ns") where a
	// capability set would report an undefined function.
	c := ast.NewCompiler().WithDefaultRegoVersion(ast.RegoV1)
	return c.WithUnsafeBuiltins(unsafeBuiltins) //nolint:staticcheck // SA1019, see above
}

// checkedSet is a policy set that passed every load-time check: what the engine compiles and
// what `policy test` runs its tests against. Both get it from checkSet, so a module one
// accepts the other accepts too, with the same problems reported the same way.
type checkedSet struct {
	modules  map[string]*ast.Module // the library's and the user's policy modules
	pkgs     []policyPackage
	disabled map[string]bool // packages turned off by the caller or data.driverguard_config
	// nodeLabels are the node label keys the modules declare (declaredNodeLabels).
	nodeLabels []string
}

// checkSet runs the load-time checks on the library and the user's modules and data: the
// namespace every package must be in, reserved namespaces and data keys,
// data.driverguard_config, deny/warn rules that are message sets, and the names to disable
// (from the caller, e.g. --disable, and from the configuration). It reports every problem at
// once, each with its file and line. tests are the user's test modules, held to the same
// namespace rules.
func checkSet(lib map[string]*ast.Module, user *parsed, tests map[string]*ast.Module, disable []string, modes map[string]Enforcement) (*checkedSet, error) {
	problems := checkNamespaces(user.modules)
	problems = append(problems, checkNamespaces(tests)...)
	for _, k := range []string{policyNamespace, decisionPackage, ClusterKey} {
		if _, ok := user.data[k]; ok {
			what := "the policy namespace"
			if k == ClusterKey {
				what = "the cluster view driverguard provides"
			}
			problems = append(problems, Problem{File: user.dataFiles[k], Message: fmt.Sprintf("a data document sets data.%s, %s; put data elsewhere, e.g. data.%s or data.<team>", k, what, configKey)})
		}
	}
	cfgDisabled, ps := disabledFromConfig(user)
	problems = append(problems, ps...)
	modules := make(map[string]*ast.Module, len(lib)+len(user.modules)+1)
	for k, m := range lib {
		modules[k] = m
	}
	for k, m := range user.modules {
		modules[k] = m
	}
	pkgs, ps := policyPackages(modules)
	problems = append(problems, ps...)
	off, ps := resolveDisabled(pkgs, disable, "--disable")
	problems = append(problems, ps...)
	offCfg, ps := resolveDisabled(pkgs, cfgDisabled, user.dataFiles[configKey])
	problems = append(problems, ps...)
	problems = append(problems, resolveEnforcement(pkgs, modes, "--enforcement")...)
	nodeLabels, ps := declaredNodeLabels(modules)
	problems = append(problems, ps...)
	if len(problems) > 0 {
		return nil, newLoadError(problems...)
	}
	for p := range offCfg {
		off[p] = true
	}
	return &checkedSet{modules: modules, pkgs: pkgs, disabled: off, nodeLabels: nodeLabels}, nil
}

// compileSet compiles the library (unless excluded) and the user's modules into a prepared
// decision query over a new store holding the user's data and the cluster view. disable are
// names from the caller (e.g. --disable); data.driverguard_config adds its own. cluster builds
// the cluster view, with or without its nodes.
func compileSet(ctx context.Context, lib map[string]*ast.Module, user *parsed, disable []string, modes map[string]Enforcement, files []string, cluster func(withNodes bool, nodeLabels []string) ast.Object) (*policySet, error) {
	checked, err := checkSet(lib, user, nil, disable, modes)
	if err != nil {
		return nil, err
	}
	modules, pkgs, off := checked.modules, checked.pkgs, checked.disabled
	set := &policySet{files: files, rules: ruleBodies(pkgs, modules, off), nodeLabels: checked.nodeLabels}
	enabled := pkgs[:0:0]
	for _, p := range pkgs {
		set.infos = append(set.infos, PolicyInfo{Package: p.pkg, Name: p.name, Rules: p.rules, Title: p.title, File: p.file, Disabled: off[p.pkg],
			Enforcement: p.enforcement(), RuleEnforcement: maps.Clone(p.modes)})
		if off[p.pkg] {
			set.disabled = append(set.disabled, p.pkg)
			continue
		}
		enabled = append(enabled, p)
		set.policies = append(set.policies, p.pkg)
	}
	policies := newCompiler()
	if policies.Compile(modules); policies.Failed() {
		return nil, newLoadError(problemsOf(policies.Errors, "")...)
	}
	set.skippable = skippablePackages(enabled)
	set.families = configFamilies(user.data)
	dm, err := decisionModule(enabled, set.skippable, policies)
	if err != nil {
		return nil, fmt.Errorf("policy: generating the decision module: %w", err)
	}
	modules[decisionFile] = dm
	c := newCompiler()
	if c.Compile(modules); c.Failed() {
		return nil, fmt.Errorf("policy: compiling the decision: %w", c.Errors)
	}
	set.readsRouting = readsInput(c, ast.MustParseRef(decisionQuery+"_RBLNDriver"), "routing")
	if set.readsRouting {
		set.guards, set.guarded = guardsOf(c, enabled)
	}
	set.readsNodes = readsData(c, ast.MustParseRef(decisionQuery), ClusterKey, "nodes")
	set.inputReads = inputReads(c, ast.Ref{ast.DefaultRootDocument, ast.StringTerm(decisionPackage)})
	set.inputReads.add("object", "kind") // objectKind
	if len(set.skippable) > 0 {
		set.inputReads.add("object", "spec") // the object guards (skipMask)
	}
	root, err := ast.InterfaceToValue(user.data)
	if err != nil {
		return nil, fmt.Errorf("policy: converting the data documents: %w", err)
	}
	data := root.(ast.Object)
	data.Insert(ast.InternedTerm(ClusterKey), ast.NewTerm(cluster(set.readsNodes, set.nodeLabels)))
	set.store = inmem.NewFromASTObject(data)
	prepare := func(kind string, mask int) (kindQuery, error) {
		q := kindQuery{}
		query := "data." + decisionPackage + "." + decisionRuleName(kind, mask)
		for _, p := range enabled {
			if p.appliesTo(kind) && !skipped(set.skippable, mask, p.pkg) {
				q.packages = append(q.packages, p.pkg)
				q.modes = append(q.modes, p.modes)
			}
		}
		var err error
		q.query, err = rego.New(rego.Query(query), rego.Compiler(c), rego.Store(set.store)).PrepareForEval(ctx)
		if err != nil {
			return q, newLoadError(problemsOf(err, "")...)
		}
		return q, nil
	}
	if set.query, err = prepare("", 0); err != nil {
		return nil, err
	}
	set.byKind = map[string]kindQuery{}
	for _, kind := range decisionKinds {
		if set.byKind[kind], err = prepare(kind, 0); err != nil {
			return nil, err
		}
	}
	set.skips = map[int]kindQuery{}
	for mask := 1; mask < 1<<len(set.skippable); mask++ {
		if set.skips[mask], err = prepare(driverKind, mask); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// readsInput reports whether a rule the query depends on reads input.<key>: a ref to it, to
// input as a whole, or to input[<variable>].
func readsInput(c *ast.Compiler, query ast.Ref, key string) bool {
	want := ast.StringTerm(key)
	return readsRef(c, query, func(ref ast.Ref) bool {
		return ref.HasPrefix(ast.InputRootRef) && (len(ref) == 1 || !ref[1].IsGround() || ref[1].Equal(want))
	})
}

// readsData reports whether a rule the query depends on reads data.<path...>: a ref to it or
// below it, to a document that contains it (data, data.<path[0]>), or one with a variable
// where the path has a key (data[x]).
func readsData(c *ast.Compiler, query ast.Ref, path ...string) bool {
	return readsRef(c, query, func(ref ast.Ref) bool {
		if !ref.HasPrefix(ast.DefaultRootRef) {
			return false
		}
		for i, key := range path {
			switch {
			case len(ref) <= i+1:
				return true
			case !ref[i+1].IsGround():
				return true
			case !ref[i+1].Equal(ast.StringTerm(key)):
				return false
			}
		}
		return true
	})
}

// readsRef reports whether a rule the query depends on has a ref that reads reports true for.
func readsRef(c *ast.Compiler, query ast.Ref, reads func(ast.Ref) bool) bool {
	found := false
	walkRules(c, query, func(r *ast.Rule) bool {
		ast.WalkRefs(r, func(ref ast.Ref) bool {
			found = found || reads(ref)
			return found
		})
		return found
	})
	return found
}

// walkRules calls visit on every rule the query depends on (its own rules, the rules and
// functions those refer to, and so on), each once, until visit returns true.
func walkRules(c *ast.Compiler, query ast.Ref, visit func(*ast.Rule) bool) {
	seen := map[*ast.Rule]bool{}
	queue := c.GetRules(query)
	for len(queue) > 0 {
		r := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if seen[r] {
			continue
		}
		seen[r] = true
		if visit(r) {
			return
		}
		for dep := range c.Graph.Dependencies(r) {
			if d, ok := dep.(*ast.Rule); ok && !seen[d] {
				queue = append(queue, d)
			}
		}
	}
}

package policy

import (
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// A routingGuard is a Go precondition of a bundled rule that reads input.routing, on the image
// tags of the pools the driver would run: when it is false, the rule cannot produce a message,
// whatever the rest of the input. Routing grows with the nodes a driver selects (every pool
// lists its nodes), so an engine whose only routing readers are guarded rules has input.routing
// built and handed to OPA only when a guard holds: the verdict is the same, and the common
// request's cost stays flat in the cluster's size.
type routingGuard func(tags []string) bool

// driverKind is the kind routing is computed for.
const driverKind = "RBLNDriver"

// validTag reports whether tag matches the OCI distribution-spec tag grammar,
// [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127} (util.oci_tag_pattern of the library), without a regular
// expression: the guard runs on every RBLNDriver request.
func validTag(tag string) bool {
	if len(tag) == 0 || len(tag) > 128 {
		return false
	}
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_':
		case i > 0 && (c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// routingGuards are the guards of the bundled rules, by package. Each must hold whenever its
// rule can fire (TestRoutingGuardsHoldWhenTheRuleFires checks them against the rules).
var routingGuards = map[string]routingGuard{
	// lib.kernel_tag fires for a pool whose tag is not a valid OCI tag.
	LibraryNamespace + ".kernel_tag": func(tags []string) bool {
		return slices.ContainsFunc(tags, func(tag string) bool { return !validTag(tag) })
	},
}

// guardsOf returns the guards of the enabled packages whose rules read input.routing, and
// false when one of them has none (a user policy, or a bundled rule without a guard): then
// routing is always handed over.
func guardsOf(c *ast.Compiler, pkgs []policyPackage) ([]routingGuard, bool) {
	var guards []routingGuard
	for _, p := range pkgs {
		if !p.appliesTo(driverKind) {
			continue
		}
		reads := slices.ContainsFunc(p.rules, func(rule string) bool {
			return readsInput(c, p.ref.Append(ast.StringTerm(rule)), "routing")
		})
		if !reads {
			continue
		}
		g, ok := routingGuards[p.pkg]
		if !ok {
			return nil, false
		}
		guards = append(guards, g)
	}
	return guards, true
}

// routingOf is the input.routing an evaluation of in hands to OPA: none when no policy of the
// set reads it, none when every reader is guarded and no guard holds on the pools' tags, and
// otherwise in.Routing, or what in.RoutingFunc builds.
func (s *policySet) routingOf(in *Input) *Routing {
	if !s.readsRouting {
		return nil
	}
	if in.Routing != nil {
		if s.guarded && !s.guardsHold(poolTags(in.Routing)) {
			return nil
		}
		return in.Routing
	}
	if in.RoutingFunc == nil || (s.guarded && !s.guardsHold(in.PoolTags)) {
		return nil
	}
	return in.RoutingFunc()
}

func (s *policySet) guardsHold(tags []string) bool {
	return slices.ContainsFunc(s.guards, func(g routingGuard) bool { return g(tags) })
}

func poolTags(r *Routing) []string {
	tags := make([]string, len(r.Pools))
	for i, p := range r.Pools {
		tags[i] = p.Tag
	}
	return tags
}

// GuardsRouting reports whether every active policy that reads input.routing is a guarded
// bundled rule (implements [RoutingGuard]).
func (e *Engine) GuardsRouting() bool {
	s := e.active.Load()
	return s.readsRouting && s.guarded
}

var _ RoutingGuard = (*Engine)(nil)

// An objectGuard is a Go precondition of a bundled rule on the object under evaluation and
// the families driverguard knows (isFamily reports whether a lowercase name is one: the
// defaults, data.driverguard_config.known_families, the cluster's): when it is false, the rule
// cannot produce a message, and the engine evaluates a decision without the rule's package.
type objectGuard func(object ast.Object, isFamily func(string) bool) bool

// objectGuards are the object guards of the bundled rules, by package. Each must hold
// whenever its rule can fire (TestObjectGuardsHoldWhenTheRuleFires). At most maxSkippable
// packages are guarded: the engine prepares a decision for every subset of them.
var objectGuards = map[string]objectGuard{
	// lib.family_in_image fires for a segment of spec.image, the last excepted, whose
	// lowercase is a family.
	LibraryNamespace + ".family_in_image": func(obj ast.Object, isFamily func(string) bool) bool {
		image, ok := stringAt(obj, "spec", "image")
		if !ok {
			return false // split and lower are undefined on anything but a string
		}
		segments := strings.Split(image, "/")
		return slices.ContainsFunc(segments[:len(segments)-1], func(s string) bool { return isFamily(strings.ToLower(s)) })
	},
}

// maxSkippable bounds the guarded packages of a set (2^n prepared decisions).
const maxSkippable = 3

// defaultFamilies are util.known_families' default.
var defaultFamilies = []string{"atom", "rebel", "ca", "cr"}

// stringAt is the string at path in obj.
func stringAt(obj ast.Object, path ...string) (string, bool) {
	var v ast.Value = obj
	for _, k := range path {
		o, ok := v.(ast.Object)
		if !ok {
			return "", false
		}
		t := o.Get(ast.StringTerm(k))
		if t == nil {
			return "", false
		}
		v = t.Value
	}
	s, ok := v.(ast.String)
	return string(s), ok
}

// configFamilies are the lowercase names of data.driverguard_config.known_families (a list
// of strings, checked at load) and the defaults: a superset of what util.known_families can be.
func configFamilies(data map[string]any) map[string]bool {
	out := map[string]bool{}
	for _, f := range defaultFamilies {
		out[f] = true
	}
	cfg, _ := data[configKey].(map[string]any)
	known, _ := cfg["known_families"].([]any)
	for _, it := range known {
		if s, ok := it.(string); ok {
			out[strings.ToLower(s)] = true
		}
	}
	return out
}

// skippablePackages are the enabled packages for RBLNDrivers that have an object guard, sorted
// (nil when more than maxSkippable: then none is skipped).
func skippablePackages(pkgs []policyPackage) []string {
	var out []string
	for _, p := range pkgs {
		if _, ok := objectGuards[p.pkg]; ok && p.appliesTo(driverKind) {
			out = append(out, p.pkg)
		}
	}
	if len(out) > maxSkippable {
		return nil
	}
	slices.Sort(out)
	return out
}

// skipMask is the set (bit i for s.skippable[i]) of guarded packages that cannot fire on the
// object of input.
func (e *Engine) skipMask(s *policySet, input ast.Value) int {
	if len(s.skippable) == 0 {
		return 0
	}
	in, _ := input.(ast.Object)
	if in == nil {
		return 0
	}
	t := in.Get(ast.InternedTerm("object"))
	if t == nil {
		return 0
	}
	obj, ok := t.Value.(ast.Object)
	if !ok {
		return 0
	}
	cluster := *e.families.Load()
	isFamily := func(f string) bool { return s.families[f] || cluster[f] }
	mask := 0
	for i, pkg := range s.skippable {
		if !objectGuards[pkg](obj, isFamily) {
			mask |= 1 << i
		}
	}
	return mask
}

// lowerFamilies are the lowercase family names of the cluster view.
func (c *clusterData) lowerFamilies() map[string]bool {
	out := make(map[string]bool, len(c.families))
	for f := range c.families {
		out[strings.ToLower(f)] = true
	}
	return out
}

package policy

import (
	"regexp"
	"slices"
	"strconv"
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
	// lib.pinned_version fires for a spec.version that is present, not "", and not a
	// semver-like string (anything but a string counts: its builtins fail, and `not` of a
	// failure holds), or a spec.manager.version string that is not semver-like.
	LibraryNamespace + ".pinned_version": func(obj ast.Object, _ func(string) bool) bool {
		if v, ok := valueAt(obj, "spec", "version"); ok {
			if s, isString := v.(ast.String); !isString || (s != "" && !semverLike.MatchString(string(s))) {
				return true
			}
		}
		if v, ok := valueAt(obj, "spec", "manager", "version"); ok {
			if s, isString := v.(ast.String); isString && !semverLike.MatchString(string(s)) {
				return true
			}
		}
		return false
	},
	// lib.manager_version fires only with spec.smd configured, for a spec.manager.version
	// that is not a plain vX.Y.Z of at least v0.2.2 (absent, "", older, not comparable).
	LibraryNamespace + ".manager_version": func(obj ast.Object, _ func(string) bool) bool {
		v, ok := valueAt(obj, "spec")
		if !ok {
			return false
		}
		spec, isObject := v.(ast.Object)
		if !isObject {
			return true
		}
		if !smdConfigured(spec) {
			return false
		}
		version, isString := stringAt(obj, "spec", "manager", "version")
		return !isString || !atLeastManager(version)
	},
}

// semverLike is the library's pinned_version.semver_like.
var semverLike = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+([-.][0-9A-Za-z][0-9A-Za-z.-]*)?$`)

// plainVersion is a vX.Y.Z without prerelease or build, no leading zeros: what OPA's semver
// accepts and compares by its three numbers.
var plainVersion = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// atLeastManager reports whether v is a plain version of at least 0.2.2 (manager_version's
// minimum); numbers too large for an int64 are not.
func atLeastManager(v string) bool {
	m := plainVersion.FindStringSubmatch(v)
	if m == nil {
		return false
	}
	var n [3]int64
	for i := range n {
		x, err := strconv.ParseInt(m[i+1], 10, 64)
		if err != nil {
			return false
		}
		n[i] = x
	}
	return n[0] > 0 || n[1] > 2 || (n[1] == 2 && n[2] >= 2)
}

// smdConfigured is manager_version's smd_configured, widened: spec.smd.registry or
// spec.smd.image present and not "", or spec.smd present and not an object.
func smdConfigured(spec ast.Object) bool {
	t := spec.Get(keyTerm("smd"))
	if t == nil {
		return false
	}
	smd, ok := t.Value.(ast.Object)
	if !ok {
		return true
	}
	for _, k := range []string{"registry", "image"} {
		if v := smd.Get(keyTerm(k)); v != nil && ast.Compare(v.Value, ast.String("")) != 0 {
			return true
		}
	}
	return false
}

// valueAt is the value at path in obj.
func valueAt(obj ast.Object, path ...string) (ast.Value, bool) {
	var v ast.Value = obj
	for _, k := range path {
		o, ok := v.(ast.Object)
		if !ok {
			return nil, false
		}
		t := o.Get(keyTerm(k))
		if t == nil {
			return nil, false
		}
		v = t.Value
	}
	return v, true
}

// keyTerm is the term of an object key, shared when it is one of the API's field names or
// one OPA interns (no allocation per lookup on the admission path).
func keyTerm(k string) *ast.Term {
	if t, ok := internedTerms[k]; ok {
		return t
	}
	return ast.InternedTerm(k)
}

// maxSkippable bounds the guarded packages of a set (2^n prepared decisions).
const maxSkippable = 3

// defaultFamilies are util.known_families' default.
var defaultFamilies = []string{"atom", "rebel", "ca", "cr"}

// stringAt is the string at path in obj.
func stringAt(obj ast.Object, path ...string) (string, bool) {
	v, _ := valueAt(obj, path...)
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
	v, _ := valueAt(in, "object")
	obj, ok := v.(ast.Object)
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

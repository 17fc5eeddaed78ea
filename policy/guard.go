package policy

import (
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
)

// A routingGuard is a Go precondition of a bundled rule that reads input.routing: when it is
// false for a routing verdict, the rule cannot produce a message on it, whatever the rest of
// the input. Routing grows with the nodes a driver selects (every pool lists its nodes), so
// an engine whose only routing readers are guarded rules hands input.routing to OPA only
// when a guard holds: the verdict is the same, and the common request's cost stays flat in
// the cluster's size.
type routingGuard func(*Routing) bool

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

// driverKind is the kind routing is computed for.
const driverKind = "RBLNDriver"

// routingGuards are the guards of the bundled rules, by package. Each must hold whenever its
// rule can fire (TestRoutingGuardsHoldWhenTheRuleFires checks them against the rules).
var routingGuards = map[string]routingGuard{
	// lib.kernel_tag fires for a pool whose tag is not a valid OCI tag.
	LibraryNamespace + ".kernel_tag": func(r *Routing) bool {
		return slices.ContainsFunc(r.Pools, func(p Pool) bool { return !validTag(p.Tag) })
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

// routingMatters reports whether the set's policies can read anything of r: they read
// routing, and either not only through guarded rules or some guard holds.
func (s *policySet) routingMatters(r *Routing) bool {
	if !s.readsRouting {
		return false
	}
	if !s.guarded {
		return true
	}
	return slices.ContainsFunc(s.guards, func(g routingGuard) bool { return g(r) })
}

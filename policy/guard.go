package policy

import (
	"slices"

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

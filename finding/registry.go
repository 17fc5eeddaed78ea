package finding

import (
	"cmp"
	"slices"
)

// Source is where a rule is written: in driverguard's Go code, in the bundled Rego library,
// or in a platform team's --policy directory.
type Source string

const (
	SourceBuiltin Source = "builtin"
	SourceLibrary Source = "library"
	SourcePolicy  Source = "policy"
)

// Rule is one rule of the registry: what can fire, and what its findings do.
type Rule struct {
	// ID is what findings name it by (Finding.Rule).
	ID string `json:"id"`
	// Level is what the rule says when it fires: deny (a deny body, a rule that refuses) or
	// warn (a warn body, a built-in warning).
	Level Level `json:"level"`
	// Enforcement is what its findings do: the Level, or what a policy's enforcement makes
	// of it (a deny body of a policy that warns warns; a policy on trial audits).
	Enforcement Level  `json:"enforcement"`
	Title       string `json:"title"`
	// Home is where the rule is written: a Go package of driverguard, or file:line of the
	// Rego rule body.
	Home   string `json:"home"`
	Source Source `json:"source"`
	// Disabled: a policy turned off (--disable, a policy's config); it does not fire.
	Disabled bool `json:"disabled,omitempty"`
}

// Registry knows every rule of a run: the built-in ones and those of the policies loaded.
// The zero value is empty and ready to use; a Registry is not safe for concurrent writes.
type Registry struct {
	rules []Rule
	byID  map[string]int
}

// NewRegistry returns a registry of the built-in rules and rules.
func NewRegistry(rules ...Rule) *Registry {
	r := &Registry{}
	r.Add(Builtin()...)
	r.Add(rules...)
	return r
}

// Add adds rules; a rule whose ID is known replaces the one before.
func (r *Registry) Add(rules ...Rule) {
	if r.byID == nil {
		r.byID = map[string]int{}
	}
	for _, rule := range rules {
		if i, ok := r.byID[rule.ID]; ok {
			r.rules[i] = rule
			continue
		}
		r.byID[rule.ID] = len(r.rules)
		r.rules = append(r.rules, rule)
	}
}

// Rule returns the rule of an ID.
func (r *Registry) Rule(id string) (Rule, bool) {
	if r == nil {
		return Rule{}, false
	}
	i, ok := r.byID[id]
	if !ok {
		return Rule{}, false
	}
	return r.rules[i], true
}

// Title is a rule's title; an unknown rule's is its ID.
func (r *Registry) Title(id string) string {
	if rule, ok := r.Rule(id); ok {
		return rule.Title
	}
	return id
}

// Rules are every rule: the policies' (by ID) first, then the built-in rules (by ID).
func (r *Registry) Rules() []Rule {
	if r == nil {
		return nil
	}
	out := slices.Clone(r.rules)
	slices.SortStableFunc(out, func(a, b Rule) int {
		return cmp.Or(cmp.Compare(sourceRank(a.Source), sourceRank(b.Source)), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// Select are the rules keep accepts, in the order of Rules.
func (r *Registry) Select(keep func(Rule) bool) []Rule {
	var out []Rule
	for _, rule := range r.Rules() {
		if keep(rule) {
			out = append(out, rule)
		}
	}
	return out
}

func sourceRank(s Source) int {
	switch s {
	case SourcePolicy:
		return 0
	case SourceLibrary:
		return 1
	}
	return 2
}

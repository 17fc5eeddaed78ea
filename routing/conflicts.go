package routing

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

// ConflictReport answers, for one new or changed driver, how it would tie with the drivers
// already in an [Index].
type ConflictReport struct {
	// Resource is the candidate's name.
	Resource string `json:"resource"`
	// Invalid holds the candidate's validation errors. When set, the candidate takes no part in
	// routing and the other fields are empty.
	Invalid field.ErrorList `json:"-"`
	// Ties are the existing nodes on which the candidate would be one of the tied (maximal
	// matching) resources, one entry per tied set (Resources include the candidate), sorted.
	Ties []Conflict `json:"ties"`
	// Potential lists the drivers the candidate could tie with on some node, existing or
	// future, sorted by resource: identical selectors, or compatible selectors neither of
	// which contains the other, unless a third driver always wins on the nodes they share.
	Potential []PotentialConflict `json:"potential"`
	// Owns is the number of existing nodes the candidate would own outright (unique most
	// specific match).
	Owns int `json:"owns"`
}

// PotentialConflict is another driver the candidate could tie with.
type PotentialConflict struct {
	Resource string `json:"resource"`
	// Identical is true when both selectors are the same.
	Identical bool `json:"identical"`
	// Labels is the smallest label set of a node on which both would tie: the union of both
	// selectors.
	Labels map[string]string `json:"labels"`
}

// Conflicts reports how candidate would tie if it were added to the index, replacing the
// driver of the same name if there is one (an UPDATE). It works from the index: the nodes it
// matches come from a label-pair inverted index and their other matches from the node groups,
// so it costs O(matched nodes + drivers), not O(nodes × drivers).
//
// On UPDATE, call it with the old object too and keep what [ConflictReport.Introduced]
// returns: a tie that already existed is not the change's fault.
func (ix *Index) Conflicts(candidate v1alpha1.RBLNDriver) ConflictReport {
	rep := ConflictReport{Resource: candidate.Name, Ties: []Conflict{}, Potential: []PotentialConflict{}}
	if errs := validateDriver(&candidate); len(errs) > 0 {
		rep.Invalid = errs
		return rep
	}
	cand := driver{obj: &candidate, name: candidate.Name, sel: selectorPairs(candidate.Spec.NodeSelector)}
	cand.n = len(cand.sel)
	replaced := int32(-1)
	if d, ok := ix.byName[candidate.Name]; ok {
		replaced = d
	}

	rep.Potential = ix.potential(&cand, replaced)
	ix.ensurePostings()

	type outcome struct {
		owns    bool
		tiedKey string
		tied    []string
	}
	outcomes := make(map[int32]*outcome)
	ties := make(map[string]*Conflict)
	ix.forMatchingNodes(cand.sel, func(node int32) {
		gi := ix.nodeGroup[node]
		o := outcomes[gi]
		if o == nil {
			o = &outcome{}
			o.owns, o.tied = ix.resolveWith(&ix.groups[gi], &cand, replaced)
			o.tiedKey = strings.Join(o.tied, "\x00")
			outcomes[gi] = o
		}
		switch {
		case o.owns:
			rep.Owns++
		case o.tied != nil:
			c := ties[o.tiedKey]
			if c == nil {
				c = &Conflict{Resources: o.tied}
				ties[o.tiedKey] = c
			}
			c.Total++
			if len(c.Nodes) < ConflictSampleSize {
				c.Nodes = append(c.Nodes, ix.nodes[node].Name)
			}
		}
	})
	for _, c := range ties {
		rep.Ties = append(rep.Ties, *c)
	}
	slices.SortFunc(rep.Ties, func(a, b Conflict) int { return slices.Compare(a.Resources, b.Resources) })
	return rep
}

// forMatchingNodes calls fn, in name order, for every candidate node that sel matches.
func (ix *Index) forMatchingNodes(sel []labelPair, fn func(node int32)) {
	if len(sel) == 0 {
		for _, n := range ix.candidates {
			fn(n)
		}
		return
	}
	shortest := 0
	for i, p := range sel {
		if len(ix.postings[p]) < len(ix.postings[sel[shortest]]) {
			shortest = i
		}
	}
next:
	for _, n := range ix.postings[sel[shortest]] {
		labels := ix.nodes[n].Labels
		for i, p := range sel {
			if i == shortest {
				continue
			}
			if v, ok := labels[p.key]; !ok || v != p.value {
				continue next
			}
		}
		fn(n)
	}
}

// resolveWith decides the nodes of group g with cand added (and replaced removed): whether
// cand owns them, or the sorted names of the tied set when cand is part of a tie.
func (ix *Index) resolveWith(g *group, cand *driver, replaced int32) (owns bool, tied []string) {
	others := make([]*driver, 0, len(g.matches))
	for _, d := range g.matches {
		if d != replaced {
			others = append(others, &ix.drivers[d])
		}
	}
	// Every driver here matches the node, so all selectors are compatible and containment is
	// containment of key sets.
	strictlyBelow := true // cand ⊋ every other
	for _, o := range others {
		switch relate(cand.sel, o.sel) {
		case relSubset: // o ⊋ cand: cand is not maximal
			return false, nil
		case relSuperset:
		default:
			strictlyBelow = false
		}
	}
	if strictlyBelow {
		return true, nil
	}
	tied = []string{cand.name}
	for _, d := range others {
		maximal := relate(d.sel, cand.sel) != relSubset
		for _, e := range others {
			if maximal && e.n > d.n && relate(d.sel, e.sel) == relSubset {
				maximal = false
			}
		}
		if maximal {
			tied = append(tied, d.name)
		}
	}
	slices.Sort(tied)
	return false, tied
}

// potential finds the valid drivers cand could tie with on some node. cand and o can both be
// maximal on a node iff they are compatible, neither strictly contains the other, and no
// third driver y with y ⊆ cand∪o strictly contains cand or o: such a y matches every node
// both match. If none exists, the node labelled exactly cand∪o ties them.
func (ix *Index) potential(cand *driver, replaced int32) []PotentialConflict {
	out := []PotentialConflict{}
	var counts map[int32]int
	for oi := range ix.drivers {
		if int32(oi) == replaced {
			continue
		}
		o := &ix.drivers[oi]
		rel := relate(cand.sel, o.sel)
		if rel != relIdentical && rel != relIncomparable {
			continue
		}
		union := unionPairs(cand.sel, o.sel)
		if rel == relIncomparable {
			if counts == nil {
				counts = make(map[int32]int)
			}
			if ix.dominated(cand, o, int32(oi), replaced, union, counts) {
				continue
			}
		}
		labels := make(map[string]string, len(union))
		for _, p := range union {
			labels[p.key] = p.value
		}
		out = append(out, PotentialConflict{Resource: o.name, Identical: rel == relIdentical, Labels: labels})
	}
	return out // ix.drivers is sorted by name
}

// dominated reports whether a valid driver other than o and replaced, with a selector inside
// union, strictly contains cand or o.
func (ix *Index) dominated(cand, o *driver, oi, replaced int32, union []labelPair, counts map[int32]int) bool {
	clear(counts)
	for _, p := range union {
		for _, y := range ix.driverPosting[p] {
			counts[y]++
		}
	}
	for y, c := range counts {
		if y == oi || y == replaced || c != ix.drivers[y].n {
			continue
		}
		ys := ix.drivers[y].sel
		if relate(ys, cand.sel) == relSuperset || relate(ys, o.sel) == relSuperset {
			return true
		}
	}
	return false
}

type relation int

const (
	relIncompatible relation = iota // some key has different values
	relIdentical
	relSubset       // a ⊊ b
	relSuperset     // a ⊋ b
	relIncomparable // compatible, each has a key the other lacks
)

// relate compares two selectors sorted by key.
func relate(a, b []labelPair) relation {
	onlyA, onlyB := false, false
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch c := strings.Compare(a[i].key, b[j].key); {
		case c < 0:
			onlyA = true
			i++
		case c > 0:
			onlyB = true
			j++
		default:
			if a[i].value != b[j].value {
				return relIncompatible
			}
			i++
			j++
		}
	}
	onlyA = onlyA || i < len(a)
	onlyB = onlyB || j < len(b)
	switch {
	case onlyA && onlyB:
		return relIncomparable
	case onlyA:
		return relSuperset
	case onlyB:
		return relSubset
	}
	return relIdentical
}

// unionPairs merges two compatible selectors sorted by key.
func unionPairs(a, b []labelPair) []labelPair {
	out := make([]labelPair, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i].key < b[j].key):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].key < a[i].key:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// Introduced keeps the conflicts of r (for the new object) that old (the same report for the
// object before an UPDATE) did not have: ties whose other resources differ from every old
// tie, and potential conflicts old did not list with the same resource and kind (a selector
// that becomes identical to another's is new even if the two could tie before).
func (r ConflictReport) Introduced(old ConflictReport) ConflictReport {
	out := r
	out.Ties = []Conflict{}
	out.Potential = []PotentialConflict{}
	oldTies := make(map[string]bool)
	for _, c := range old.Ties {
		oldTies[otherKey(c.Resources, old.Resource)] = true
	}
	for _, c := range r.Ties {
		if !oldTies[otherKey(c.Resources, r.Resource)] {
			out.Ties = append(out.Ties, c)
		}
	}
	type pot struct {
		resource  string
		identical bool
	}
	oldPot := make(map[pot]bool)
	for _, p := range old.Potential {
		oldPot[pot{p.Resource, p.Identical}] = true
	}
	for _, p := range r.Potential {
		if !oldPot[pot{p.Resource, p.Identical}] {
			out.Potential = append(out.Potential, p)
		}
	}
	return out
}

func otherKey(resources []string, self string) string {
	others := slices.DeleteFunc(slices.Clone(resources), func(s string) bool { return s == self })
	return strings.Join(others, "\x00")
}

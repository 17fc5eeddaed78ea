package routing

import (
	"iter"
	"math/bits"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/operator"
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

// Assessment is what one new or changed driver would do if it were admitted now: the
// conflicts of its [ConflictReport] and the nodes it would serve, grouped into the driver
// DaemonSets (pools) it would run. It is what [Route] would say about the candidate with the
// candidate in place of the driver of the same name, computed from the nodes the candidate's
// selector matches only.
type Assessment struct {
	ConflictReport
	// Selected is the number of candidate nodes (rebellions.ai/npu.deploy.driver=true) the
	// selector matches.
	Selected int `json:"selected"`
	// Kept is the number of tied nodes the candidate keeps because it is their current owner
	// (their rebellions.ai/npu.driver.owner label) and still matches them. Owns + Kept nodes
	// get the candidate's driver.
	Kept int `json:"kept"`
	// Pools are the driver DaemonSets the candidate would run, sorted by pool name, each with
	// its sorted nodes; a pool whose image cannot be composed has an empty Image and reason
	// InvalidImageTag. DaemonSet names are those of [DaemonSetName] (Route's renaming of two
	// pools that would share a name across drivers is not applied).
	Pools []Pool `json:"pools"`
	// Unpooled are the nodes the candidate would own that its pools do not run on, sorted by
	// name, with reason NFDLabelMissing, DriverFamilyLabelMissing or PoolNameCollision
	// (ConflictingNodeSelector for a tied node it keeps).
	Unpooled []NodeResult `json:"unpooled"`
	// PoolLabels are the distinct labels of the pools the candidate would run, in no order:
	// what [Index.AssessPoolLabels] gives in place of Pools (nil otherwise).
	PoolLabels []operator.Pool `json:"-"`
}

// Conflicts reports how candidate would tie if it were added to the index, replacing the
// driver of the same name if there is one (an UPDATE). It works from the index: the nodes it
// matches come from a label-pair inverted index and their other matches from the node groups,
// so it costs O(matched nodes + drivers), not O(nodes × drivers).
//
// On UPDATE, package decision calls it for the old object too: a tie that already existed is
// not the change's fault.
func (ix *Index) Conflicts(candidate v1alpha1.RBLNDriver) ConflictReport {
	return ix.assess(&candidate, ix.slotByName(candidate.Name), false).ConflictReport
}

// Assess is [Index.Conflicts] plus the nodes and pools the candidate would serve, at the same
// cost order: O(matched nodes + drivers).
func (ix *Index) Assess(candidate *v1alpha1.RBLNDriver) Assessment {
	return ix.assess(candidate, ix.slotByName(candidate.Name), true)
}

func (ix *Index) slotByName(name string) int32 {
	if d, ok := ix.byName[name]; ok {
		return d
	}
	return -1
}

// Special owners of a node group resolved with a candidate.
const (
	// noOwner: the group is tied.
	noOwner int32 = -1
	// candidateOwner: the candidate owns the group.
	candidateOwner int32 = -2
	// otherOwner: a driver strictly above the candidate matches the group, so the candidate
	// neither owns nor ties it; whether another driver owns it or it is tied among others is
	// resolved only when it matters (resolveOthers).
	otherOwner int32 = -3
)

// groupSeen maps node groups to outcome numbers: a slice indexed by group when many groups
// may be touched, a map when few are.
type groupSeen struct {
	dense  []int32
	sparse map[int32]int32
}

func newGroupSeen(groups, estimate int) groupSeen {
	if estimate*8 >= groups {
		return groupSeen{dense: make([]int32, groups)}
	}
	return groupSeen{sparse: make(map[int32]int32, estimate)}
}

func (s groupSeen) get(g int32) int32 {
	if s.dense != nil {
		return s.dense[g]
	}
	return s.sparse[g]
}

func (s groupSeen) set(g, v int32) {
	if s.dense != nil {
		s.dense[g] = v
		return
	}
	s.sparse[g] = v
}

// matchEstimate bounds the candidate nodes sel matches: the shortest posting of its pairs.
func (ix *Index) matchEstimate(sel []labelPair) int {
	n := len(ix.candidates)
	for _, p := range sel {
		n = min(n, len(ix.postings[p]))
	}
	return n
}

// groupOutcome is how one node group is decided with the candidate in place.
type groupOutcome struct {
	owner int32 // an index driver, candidateOwner, or noOwner (tied)
	tie   *Conflict
}

// AssessValid is [Index.Assess] (full) or [Index.Conflicts] (not full) for a candidate that
// validation.ValidateDriver accepts, without validating it again: package decision validates
// every driver itself before it routes it, and validating twice would cost more than the
// routing. An invalid candidate must not be given.
func (ix *Index) AssessValid(candidate *v1alpha1.RBLNDriver, full bool) Assessment {
	detail := conflictsOnly
	if full {
		detail = withPools
	}
	return ix.assessValid(candidate, ix.slotByName(candidate.Name), detail)
}

// AssessPoolLabels is [Index.AssessValid] with the labels of the pools the candidate would run
// (Assessment.PoolLabels) in place of the pools: from them a caller can compose every pool's
// image tag without the pools' node lists, which grow with the nodes the candidate selects.
// The candidate must be valid, as for AssessValid.
func (ix *Index) AssessPoolLabels(candidate *v1alpha1.RBLNDriver) Assessment {
	return ix.assessValid(candidate, ix.slotByName(candidate.Name), withPoolLabels)
}

// assessDetail is how much of an assessment is computed beyond the conflicts.
type assessDetail int

const (
	conflictsOnly  assessDetail = iota
	withPoolLabels              // and the distinct labels of the pools (Assessment.PoolLabels)
	withPools                   // and the pools with their nodes, and the unpooled nodes
)

func detailOf(full bool) assessDetail {
	if full {
		return withPools
	}
	return conflictsOnly
}

func (ix *Index) assess(candidate *v1alpha1.RBLNDriver, replaced int32, full bool) Assessment {
	if errs := validation.ValidateDriver(candidate); len(errs) > 0 {
		a := newAssessment(candidate.Name, full)
		a.Invalid = errs
		return a
	}
	return ix.assessValid(candidate, replaced, detailOf(full))
}

func newAssessment(name string, full bool) Assessment {
	a := Assessment{ConflictReport: ConflictReport{Resource: name, Ties: []Conflict{}, Potential: []PotentialConflict{}}}
	if full {
		a.Pools, a.Unpooled = []Pool{}, []NodeResult{}
	}
	return a
}

func (ix *Index) assessValid(candidate *v1alpha1.RBLNDriver, replaced int32, detail assessDetail) Assessment {
	full := detail == withPools
	a := newAssessment(candidate.Name, full)
	cand := ix.candidate(candidate)
	a.Potential = ix.potential(&cand.driver, replaced)
	if !cand.extra && detail != withPools {
		ix.assessGroups(&a, &cand, replaced, detail)
		return a
	}
	ix.ensurePostings()

	// seen maps a group to 1 + its index in outcomes; 0 means not decided yet. A slice when
	// the candidate may match many groups, a map when it matches few.
	seen := newGroupSeen(len(ix.groups), ix.matchEstimate(cand.sel))
	var outcomes []groupOutcome
	ties := make(map[string]*Conflict)
	var pools *driverPools
	if full {
		pools = ix.newDriverPools(&cand.driver)
	}
	var labelsOf operator.PoolSet // the pools defined so far, with withPoolLabels
	run := func(node int32, tied bool) {
		switch detail {
		case withPools:
			nr := NodeResult{Name: ix.nodes[node].Name, Owner: cand.name, CurrentOwner: ix.nodes[node].Labels[operator.LabelOwner]}
			if tied {
				nr.Reason = ReasonConflictingNodeSelector
			}
			if !pools.add(node, &nr) {
				a.Unpooled = append(a.Unpooled, nr)
			}
		case withPoolLabels:
			if np := &ix.pools[ix.nodePool[node]]; np.err == nil {
				if defined, _ := labelsOf.Add(np.pool); defined == np.pool && !slices.Contains(a.PoolLabels, np.pool) {
					a.PoolLabels = append(a.PoolLabels, np.pool)
				}
			}
		}
	}
	ix.forMatchingNodes(cand.sel, func(node int32) {
		a.Selected++
		gi := ix.nodeGroup[node]
		oi := seen.get(gi)
		if oi == 0 {
			o := groupOutcome{owner: otherOwner}
			owner, tied, candTied := ix.resolveCandidate(&ix.groups[gi], &cand, replaced)
			o.owner = owner
			if candTied {
				names := append(ix.names(tied), cand.name)
				slices.Sort(names)
				key := strings.Join(names, "\x00")
				if o.tie = ties[key]; o.tie == nil {
					o.tie = &Conflict{Resources: names}
					ties[key] = o.tie
				}
			}
			outcomes = append(outcomes, o)
			oi = int32(len(outcomes))
			seen.set(gi, oi)
		}
		o := &outcomes[oi-1]
		if o.tie != nil {
			o.tie.Total++
			if len(o.tie.Nodes) < ConflictSampleSize {
				o.tie.Nodes = append(o.tie.Nodes, ix.nodes[node].Name)
			}
		}
		if o.owner == candidateOwner {
			a.Owns++
			run(node, false)
			return
		}
		if detail == conflictsOnly || ix.nodes[node].Labels[operator.LabelOwner] != cand.name {
			return
		}
		// The candidate is the node's current owner and still matches it: it keeps the node
		// if the node is tied (with or without the candidate).
		if o.owner == otherOwner {
			o.owner = ix.resolveOthers(&ix.groups[gi], replaced)
		}
		if o.owner == noOwner {
			a.Kept++
			run(node, true)
		}
	})
	for _, c := range ties {
		a.Ties = append(a.Ties, *c)
	}
	slices.SortFunc(a.Ties, func(x, y Conflict) int { return slices.Compare(x.Resources, y.Resources) })
	if full {
		a.Pools = pools.sorted()
	}
	return a
}

// forMatchingNodes calls fn, in name order, for every candidate node that sel matches. It
// walks the shortest posting of sel's pairs; the pairs whose keys the index knows are checked
// once per node group (every node of a group carries the same values for those keys), the
// others on the node's labels.
func (ix *Index) forMatchingNodes(sel []labelPair, fn func(node int32)) {
	ix.ensurePostings()
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
	type indexed struct {
		ki int
		v  string
	}
	var known []indexed
	var extra []labelPair
	for i, p := range sel {
		if i == shortest {
			continue
		}
		if ki, ok := ix.keyIdx[p.key]; ok {
			known = append(known, indexed{ki, p.value})
		} else {
			extra = append(extra, p)
		}
	}
	groupOK := map[int32]bool{}
next:
	for _, n := range ix.postings[sel[shortest]] {
		if len(known) > 0 {
			gi := ix.nodeGroup[n]
			ok, seen := groupOK[gi]
			if !seen {
				ok = true
				for _, k := range known {
					if v, has := ix.groups[gi].value(k.ki); !has || v != k.v {
						ok = false
						break
					}
				}
				groupOK[gi] = ok
			}
			if !ok {
				continue
			}
		}
		labels := ix.nodes[n].Labels
		for _, p := range extra {
			if v, ok := labels[p.key]; !ok || v != p.value {
				continue next
			}
		}
		fn(n)
	}
}

// candidateDriver is a driver under review: its key set over Index.keys, and whether it
// uses a key no indexed driver uses (then no indexed driver can contain it).
type candidateDriver struct {
	driver
	extra bool
}

func (ix *Index) candidate(d *v1alpha1.RBLNDriver) candidateDriver {
	c := candidateDriver{driver: driver{obj: d, name: d.Name, sel: selectorPairs(d.Spec.NodeSelector)}}
	c.n = len(c.sel)
	c.keys = make([]uint64, ix.words)
	for _, p := range c.sel {
		ki, ok := ix.keyIdx[p.key]
		if !ok {
			c.extra = true
			continue
		}
		c.keys[ki/64] |= 1 << (ki % 64)
	}
	return c
}

// ignored reports whether driver d is left out when deciding with a candidate: it is the
// driver the candidate replaces, or it is not active.
func (ix *Index) ignored(d, replaced int32) bool { return d == replaced || !ix.live(d) }

// resolveCandidate decides the nodes of group g with cand added (replaced and inactive
// drivers left out): candidateOwner; or, when no unique strict maximum exists and cand is
// one of the maximal drivers, noOwner with the other tied drivers; or otherOwner when a
// driver strictly above cand matches (cand neither owns nor ties the group). Every driver
// involved matches the node, so the selectors agree on shared keys and containment is
// containment of key sets.
func (ix *Index) resolveCandidate(g *group, cand *candidateDriver, replaced int32) (owner int32, tied []int32, candTied bool) {
	below := func(d *driver) bool { return d.n < cand.n && subset(d.keys, cand.keys) } // d ⊊ cand
	above := func(d *driver) bool { return !cand.extra && d.n > cand.n && subset(cand.keys, d.keys) }
	allBelow := true
	for _, di := range g.matches {
		if ix.ignored(di, replaced) {
			continue
		}
		d := &ix.drivers[di]
		if above(d) {
			return otherOwner, nil, false
		}
		allBelow = allBelow && below(d)
	}
	if allBelow {
		return candidateOwner, nil, false
	}
	// cand is maximal and something not below it matches: a tie. The other maximal drivers
	// are those not strictly inside cand nor inside another match.
next:
	for _, di := range g.matches {
		if ix.ignored(di, replaced) {
			continue
		}
		d := &ix.drivers[di]
		if below(d) {
			continue
		}
		for _, ei := range g.matches {
			if e := &ix.drivers[ei]; !ix.ignored(ei, replaced) && e.n > d.n && subset(d.keys, e.keys) {
				continue next
			}
		}
		tied = append(tied, di)
	}
	return noOwner, tied, true
}

// resolveOthers decides a group the candidate does not win (otherOwner) without it: the
// driver that owns it, or noOwner when it is tied among the others.
func (ix *Index) resolveOthers(g *group, replaced int32) int32 {
	live := make([]int32, 0, len(g.matches))
	for _, di := range g.matches {
		if !ix.ignored(di, replaced) {
			live = append(live, di)
		}
	}
	owner, _ := ix.resolve(live)
	return owner
}

// potential finds the valid drivers cand could tie with on some node. cand and o can both be
// maximal on a node iff they are compatible, neither strictly contains the other, and no
// third driver y with y ⊆ cand∪o strictly contains cand or o: such a y matches every node
// both match. If none exists, the node labelled exactly cand∪o ties them.
func (ix *Index) potential(cand *driver, replaced int32) []PotentialConflict {
	out := []PotentialConflict{}
	// inCand[y] = |y ∩ cand|, extra[y] = |y ∩ (o \ cand)| for the o at hand.
	var inCand, extra []int32
	var touched []int32
	for oi := range ix.compatible(cand) {
		if ix.ignored(int32(oi), replaced) {
			continue
		}
		o := &ix.drivers[oi]
		rel := relate(cand.sel, o.sel)
		if rel != relIdentical && rel != relIncomparable {
			continue
		}
		if rel == relIncomparable {
			if inCand == nil {
				inCand, extra = make([]int32, len(ix.drivers)), make([]int32, len(ix.drivers))
				for _, p := range cand.sel {
					for _, y := range ix.driverPosting[p] {
						inCand[y]++
					}
				}
			}
			var dominated bool
			dominated, touched = ix.dominated(cand, o, int32(oi), replaced, inCand, extra, touched[:0])
			if dominated {
				continue
			}
		}
		union := unionPairs(cand.sel, o.sel)
		labels := make(map[string]string, len(union))
		for _, p := range union {
			labels[p.key] = p.value
		}
		out = append(out, PotentialConflict{Resource: o.name, Identical: rel == relIdentical, Labels: labels})
	}
	return out // ix.drivers is sorted by name
}

// compatible yields, in ascending order, the drivers that have no key of cand's selector
// with another value: the only ones cand can be equal to or tie with. The others are ruled out
// with bitsets, O(drivers/64) per key of cand, instead of comparing every selector.
func (ix *Index) compatible(cand *driver) iter.Seq[int] {
	dwords := (len(ix.drivers) + 63) / 64
	out := make([]uint64, dwords)
	for w := range out {
		out[w] = ^uint64(0)
	}
	if tail := len(ix.drivers) % 64; tail != 0 {
		out[dwords-1] = 1<<tail - 1
	}
	same := make([]uint64, dwords)
	for _, p := range cand.sel {
		ki, ok := ix.keyIdx[p.key]
		if !ok {
			continue // no driver has the key
		}
		clear(same)
		for _, d := range ix.driverPosting[p] {
			same[d/64] |= 1 << (d % 64)
		}
		for w, x := range ix.keyDrivers[ki] {
			out[w] &^= x &^ same[w] // drivers with the key, and another value
		}
	}
	return func(yield func(int) bool) {
		for w, x := range out {
			for x != 0 {
				b := bits.TrailingZeros64(x)
				if !yield(w*64 + b) {
					return
				}
				x &= x - 1
			}
		}
	}
}

// dominated reports whether some active driver y other than o and replaced satisfies
// y ⊆ cand∪o and (y ⊋ cand or y ⊋ o). Such a y must have a pair of o outside cand (else
// y ⊆ cand, and neither can hold for incomparable cand and o), so only the postings of those
// pairs are walked. extra is scratch space, left zeroed.
func (ix *Index) dominated(cand, o *driver, oi, replaced int32, inCand, extra, touched []int32) (bool, []int32) {
	oOnly := 0
	for _, p := range o.sel {
		if _, shared := pairIn(cand.sel, p); shared {
			continue
		}
		oOnly++
		for _, y := range ix.driverPosting[p] {
			if extra[y] == 0 {
				touched = append(touched, y)
			}
			extra[y]++
		}
	}
	found := false
	for _, y := range touched {
		yd := &ix.drivers[y]
		inUnion := inCand[y] + extra[y] // |y ∩ (cand ∪ o)|
		if !found && y != oi && !ix.ignored(y, replaced) && int(inUnion) == yd.n {
			aboveCand := int(inCand[y]) == cand.n && yd.n > cand.n
			aboveO := int(extra[y]) == oOnly && yd.n > o.n && relate(yd.sel, o.sel) == relSuperset
			found = aboveCand || aboveO
		}
		extra[y] = 0
	}
	return found, touched
}

// pairIn reports whether sel (sorted by key) has p's key, and whether with p's value.
func pairIn(sel []labelPair, p labelPair) (hasKey, same bool) {
	i, ok := slices.BinarySearchFunc(sel, p.key, func(q labelPair, k string) int { return strings.Compare(q.key, k) })
	if !ok {
		return false, false
	}
	return true, sel[i].value == p.value
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

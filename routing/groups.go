package routing

import (
	"cmp"
	"slices"
	"strings"

	"github.com/driverguard/driverguard/operator"
)

// Node groups as units: every node of a group carries the same values for every key a valid
// selector uses, so a candidate whose keys are all such keys matches a group whole and is
// decided once for it. assessGroups accounts for a group's nodes together, from what
// indexGroups precomputed, and costs the number of groups the candidate selects, not the
// number of nodes: an admission at 100,000 nodes costs what it costs at 100.

// groupMembers are a group's candidate nodes, arranged for assessGroups.
type groupMembers struct {
	nodes []int32     // ascending (name order)
	pools []poolFirst // the distinct pools of nodes (pools without an error), by first node
	runs  []ownerRun  // nodes by their current owner label, sorted by owner
}

// ownerRun are a group's nodes whose owner label (LabelOwner) is owner ("": none).
type ownerRun struct {
	owner string
	nodes []int32 // ascending
	pools []poolFirst
}

// poolFirst is a pool (index into Index.pools) and the first node, in name order, that joins
// it among some nodes.
type poolFirst struct{ pool, first int32 }

// indexGroups fills every group's members and the groups' postings (ix.groupPostings).
func (ix *Index) indexGroups() {
	for _, n := range ix.candidates { // ascending
		g := &ix.groups[ix.nodeGroup[n]]
		g.members.nodes = append(g.members.nodes, n)
	}
	ix.groupPostings = make(map[labelPair][]int32)
	for gi := range ix.groups {
		g := &ix.groups[gi]
		m := &g.members
		m.pools = ix.distinctPools(m.nodes)
		byOwner := slices.Clone(m.nodes)
		slices.SortStableFunc(byOwner, func(a, b int32) int { return strings.Compare(ix.owner(a), ix.owner(b)) })
		for i := 0; i < len(byOwner); {
			j := i + 1
			for j < len(byOwner) && ix.owner(byOwner[j]) == ix.owner(byOwner[i]) {
				j++
			}
			run := byOwner[i:j:j]
			m.runs = append(m.runs, ownerRun{owner: ix.owner(run[0]), nodes: run, pools: ix.distinctPools(run)})
			i = j
		}
		for _, kv := range g.kvs {
			p := labelPair{ix.keys[kv.k], kv.v}
			ix.groupPostings[p] = append(ix.groupPostings[p], int32(gi))
		}
	}
}

func (ix *Index) owner(n int32) string { return ix.nodes[n].Labels[operator.LabelOwner] }

// distinctPools are the distinct pools of nodes (ascending), each with its first node;
// nodes without a pool or whose pool has an error are left out.
func (ix *Index) distinctPools(nodes []int32) []poolFirst {
	var out []poolFirst
	for _, n := range nodes {
		if pi := ix.nodePool[n]; pi >= 0 && ix.pools[pi].err == nil && !slices.ContainsFunc(out, func(p poolFirst) bool { return p.pool == pi }) {
			out = append(out, poolFirst{pool: pi, first: n})
		}
	}
	return out
}

// run returns the nodes of the group whose owner label is owner (nil when none).
func (m *groupMembers) run(owner string) *ownerRun {
	i, ok := slices.BinarySearchFunc(m.runs, owner, func(r ownerRun, o string) int { return strings.Compare(r.owner, o) })
	if !ok {
		return nil
	}
	return &m.runs[i]
}

// forMatchingGroups calls fn for every group sel matches; every key of sel must be a key of
// the index. It walks the shortest group posting of sel's pairs.
func (ix *Index) forMatchingGroups(sel []labelPair, fn func(gi int32)) {
	if len(sel) == 0 {
		for gi := range ix.groups {
			fn(int32(gi))
		}
		return
	}
	shortest := 0
	for i, p := range sel {
		if len(ix.groupPostings[p]) < len(ix.groupPostings[sel[shortest]]) {
			shortest = i
		}
	}
next:
	for _, gi := range ix.groupPostings[sel[shortest]] {
		g := &ix.groups[gi]
		for i, p := range sel {
			if i == shortest {
				continue
			}
			if v, ok := g.value(ix.keyIdx[p.key]); !ok || v != p.value {
				continue next
			}
		}
		fn(gi)
	}
}

// assessGroups is assessValid's loop for a candidate whose keys are all keys of the index
// and a detail without the pools' nodes: it decides each group the candidate selects once
// and counts its nodes, the ties' samples and the pools' labels as the loop over nodes
// would (the same nodes in name order, the same pool first defining a name).
func (ix *Index) assessGroups(a *Assessment, cand *candidateDriver, replaced int32, detail assessDetail) {
	ties := make(map[string]*Conflict)
	samples := make(map[*Conflict][]int32)
	var pools []poolFirst
	ix.forMatchingGroups(cand.sel, func(gi int32) {
		g := &ix.groups[gi]
		nodes := g.members.nodes
		a.Selected += len(nodes)
		owner, tied, candTied := ix.resolveCandidate(g, cand, replaced)
		if candTied {
			names := append(ix.names(tied), cand.name)
			slices.Sort(names)
			key := strings.Join(names, "\x00")
			tie := ties[key]
			if tie == nil {
				tie = &Conflict{Resources: names}
				ties[key] = tie
			}
			tie.Total += len(nodes)
			samples[tie] = append(samples[tie], nodes[:min(len(nodes), ConflictSampleSize)]...)
		}
		if owner == candidateOwner {
			a.Owns += len(nodes)
			pools = append(pools, g.members.pools...)
			return
		}
		if detail == conflictsOnly {
			return
		}
		// The nodes the candidate owns now, which it keeps if they are tied.
		run := g.members.run(cand.name)
		if run == nil {
			return
		}
		if owner == otherOwner {
			owner = ix.resolveOthers(g, replaced)
		}
		if owner == noOwner {
			a.Kept += len(run.nodes)
			pools = append(pools, run.pools...)
		}
	})
	for tie, nodes := range samples {
		slices.Sort(nodes)
		for _, n := range nodes[:min(len(nodes), ConflictSampleSize)] {
			tie.Nodes = append(tie.Nodes, ix.nodes[n].Name)
		}
	}
	for _, c := range ties {
		a.Ties = append(a.Ties, *c)
	}
	slices.SortFunc(a.Ties, func(x, y Conflict) int { return slices.Compare(x.Resources, y.Resources) })
	if detail != withPoolLabels {
		return
	}
	slices.SortFunc(pools, func(x, y poolFirst) int { return cmp.Compare(x.first, y.first) })
	var labelsOf operator.PoolSet
	for _, pf := range pools {
		p := ix.pools[pf.pool].pool
		if defined, _ := labelsOf.Add(p); defined == p && !slices.Contains(a.PoolLabels, p) {
			a.PoolLabels = append(a.PoolLabels, p)
		}
	}
}

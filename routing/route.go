package routing

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

// Route decides owner, pool and image for every node as rbln-npu-operator does (package
// operator has its rules). It is deterministic: the result does not depend on the order of
// drivers or nodes.
func Route(drivers []v1alpha1.RBLNDriver, nodes []Node, opts Options) *Result {
	return newIndex(drivers, nodes, opts).Route()
}

// Route routes the indexed nodes; see the package documentation for the rules.
func (ix *Index) Route() *Result {
	res := &Result{
		Nodes:     make([]NodeResult, len(ix.nodes)),
		Conflicts: []Conflict{},
		Invalid:   slices.Clone(ix.invalid),
		Pools:     []Pool{},
		SMD:       []SMDDaemonSet{},
	}

	pools := make(map[int32]*driverPools) // by owner
	type tie struct {
		c             *Conflict
		kept, notKept string // node details
	}
	ties := make(map[string]*tie)

	for i := range ix.nodes {
		n := &ix.nodes[i]
		nr := &res.Nodes[i]
		nr.Name = n.Name
		nr.CurrentOwner = n.Labels[operator.LabelOwner]
		gi := ix.nodeGroup[i]
		if gi < 0 {
			nr.Reason = ReasonOutOfScope
			if nr.CurrentOwner != "" {
				nr.Detail = fmt.Sprintf("%s is not %q: rbln-npu-operator removes its %s label, and its driver pod goes", operator.LabelDeployDriver, operator.DeployDriverTrue, operator.LabelOwner)
			}
			continue
		}
		g := &ix.groups[gi]
		owner := g.owner
		switch {
		case len(g.matches) == 0:
			nr.Reason = ReasonNoMatchingDriver
			continue
		case owner < 0:
			nr.Reason = ReasonConflictingNodeSelector
			tc := ties[g.tiedKey]
			if tc == nil {
				c := &Conflict{Resources: ix.names(g.tied)}
				tied := "tied between " + strings.Join(c.Resources, ", ")
				tc = &tie{c: c, kept: tied + "; keeps its current owner, which still matches", notKept: tied + "; no owner"}
				ties[g.tiedKey] = tc
			}
			tc.c.Total++
			if len(tc.c.Nodes) < ConflictSampleSize {
				tc.c.Nodes = append(tc.c.Nodes, n.Name)
			}
			if d, ok := ix.byName[nr.CurrentOwner]; ok && g.has(d) {
				owner = d
				nr.Detail = tc.kept
			} else {
				nr.Detail = tc.notKept
				continue
			}
		}
		nr.Owner = ix.drivers[owner].name
		dp := pools[owner]
		if dp == nil {
			dp = ix.newDriverPools(&ix.drivers[owner])
			pools[owner] = dp
		}
		dp.add(int32(i), nr)
	}

	for _, tc := range ties {
		res.Conflicts = append(res.Conflicts, *tc.c)
	}
	slices.SortFunc(res.Conflicts, func(a, b Conflict) int { return slices.Compare(a.Resources, b.Resources) })

	for _, dp := range pools {
		for _, p := range dp.byName {
			if len(p.Nodes) > 0 {
				res.Pools = append(res.Pools, *p)
			}
		}
	}
	sortPools(res.Pools)
	ix.markDaemonSetCollisions(res)

	for owner, dp := range pools {
		if !slices.ContainsFunc(res.Pools, func(p Pool) bool { return p.Owner == dp.d.name }) {
			continue
		}
		d := &ix.drivers[owner]
		s := SMDDaemonSet{Resource: d.name, DaemonSet: operator.SMDDaemonSet(d.name)}
		img, err := SMDImage(&d.obj.Spec)
		if err != nil {
			s.Detail = err.Error()
		}
		s.Image = img
		res.SMD = append(res.SMD, s)
	}
	slices.SortFunc(res.SMD, func(a, b SMDDaemonSet) int { return strings.Compare(a.Resource, b.Resource) })
	return res
}

func (ix *Index) names(ds []int32) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = ix.drivers[d].name
	}
	return out
}

// sortPools orders pools by name, then owner.
func sortPools(pools []Pool) {
	slices.SortFunc(pools, func(a, b Pool) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Owner, b.Owner))
	})
}

// markDaemonSetCollisions marks the pools of different drivers that compose one DaemonSet
// name: driver "d" on family "b-x" and driver "d-b" on family "x" both compose
// "d-b-x-<os>-<kernel>". The operator refuses to adopt a DaemonSet labelled for another
// RBLNDriver, so whichever driver it reconciles first keeps the name and the other's pool gets
// no driver: driverguard cannot tell which, so both are reported, with their nodes.
func (ix *Index) markDaemonSetCollisions(res *Result) {
	byName := make(map[string][]int, len(res.Pools))
	for i, p := range res.Pools {
		byName[p.DaemonSet] = append(byName[p.DaemonSet], i)
	}
	for _, same := range byName {
		if len(same) < 2 {
			continue
		}
		for _, i := range same {
			p := &res.Pools[i]
			var others []string
			for _, j := range same {
				if j != i {
					others = append(others, fmt.Sprintf("%s's pool %s", res.Pools[j].Owner, res.Pools[j].Name))
				}
			}
			p.Reason, p.Detail = ReasonDaemonSetNotCreated, fmt.Sprintf(
				"its DaemonSet name %s is also that of %s: rbln-npu-operator refuses to adopt a DaemonSet labelled for another RBLNDriver (\"name collision\"), so only the RBLNDriver it reconciles first runs it; rename one of the RBLNDrivers",
				p.DaemonSet, strings.Join(others, " and "))
			for _, node := range p.Nodes {
				k, ok := slices.BinarySearchFunc(res.Nodes, node, func(n NodeResult, name string) int { return strings.Compare(n.Name, name) })
				if ok && res.Nodes[k].Reason != ReasonConflictingNodeSelector {
					res.Nodes[k].Reason, res.Nodes[k].Detail = p.Reason, p.Detail
				}
			}
		}
	}
}

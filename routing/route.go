package routing

import (
	"slices"
	"strings"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

// Route decides owner, pool and image for every node (SPEC §3, §4). It is deterministic:
// the result does not depend on the order of drivers or nodes.
func Route(drivers []v1alpha1.RBLNDriver, nodes []Node) *Result {
	return newIndex(drivers, nodes).Route()
}

type poolKey struct {
	owner, pool int32
}

// Route routes the indexed nodes; see the package documentation for the rules.
func (ix *Index) Route() *Result {
	res := &Result{
		Nodes:     make([]NodeResult, len(ix.nodes)),
		Conflicts: []Conflict{},
		Invalid:   slices.Clone(ix.invalid),
		Pools:     []Pool{},
		SMD:       make([]SMDDaemonSet, 0, len(ix.drivers)),
	}

	pools := make(map[poolKey]*Pool)
	type tie struct {
		c             *Conflict
		kept, notKept string // node details
	}
	ties := make(map[string]*tie)

	for i := range ix.nodes {
		n := &ix.nodes[i]
		nr := &res.Nodes[i]
		nr.Name = n.Name
		nr.CurrentOwner = n.Labels[v1alpha1.LabelOwner]
		gi := ix.nodeGroup[i]
		if gi < 0 {
			nr.Reason = ReasonOutOfScope
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

		np := &ix.pools[ix.nodePool[i]]
		if np.err != nil {
			if nr.Reason == "" {
				nr.Reason = np.err.Reason
				nr.Detail = np.err.Error()
			}
			continue
		}
		key := poolKey{owner, ix.nodePool[i]}
		p := pools[key]
		if p == nil {
			p = newPool(&ix.drivers[owner], np.labels, np.name)
			pools[key] = p
		}
		p.Nodes = append(p.Nodes, n.Name)
		nr.Pool = p.Name
		nr.Image = p.Image
		if p.Reason != "" && nr.Reason == "" {
			nr.Reason = p.Reason
			nr.Detail = p.Detail
		}
	}

	for _, tc := range ties {
		res.Conflicts = append(res.Conflicts, *tc.c)
	}
	slices.SortFunc(res.Conflicts, func(a, b Conflict) int { return slices.Compare(a.Resources, b.Resources) })

	for _, p := range pools {
		res.Pools = append(res.Pools, *p)
	}
	ix.dedupeDaemonSets(res.Pools)
	slices.SortFunc(res.Pools, func(a, b Pool) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Owner, b.Owner)
	})

	for _, d := range ix.drivers {
		s := SMDDaemonSet{Resource: d.name, DaemonSet: SMDDaemonSetName(d.name)}
		img, err := SMDImage(&d.obj.Spec)
		if err != nil {
			s.Detail = err.Error()
		}
		s.Image = img
		res.SMD = append(res.SMD, s)
	}
	return res
}

func (ix *Index) names(ds []int32) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = ix.drivers[d].name
	}
	return out
}

func newPool(d *driver, pl PoolLabels, name string) *Pool {
	p := &Pool{
		Name:         name,
		DaemonSet:    daemonSetName(d.name, name, pl),
		Owner:        d.name,
		NodeSelector: pl.Selector(),
		Labels:       pl,
	}
	img, err := DriverImage(&d.obj.Spec, pl)
	if err != nil {
		p.Reason = ReasonInvalidImageTag
		p.Detail = err.Error()
	}
	p.Image = img
	return p
}

// dedupeDaemonSets gives every pool whose DaemonSet name another pool also uses a hashed name
// instead. Names differ by construction within one driver; across drivers they can meet only
// with contrived labels: driver "d" on {family b, os x, version 1, kernel y1-k} and driver
// "d-b" on {family x1, os y, version 1, kernel k} both compose "d-b-x1-y1-k".
func (ix *Index) dedupeDaemonSets(pools []Pool) {
	seen := make(map[string]int, len(pools))
	for _, p := range pools {
		seen[p.DaemonSet]++
	}
	for i := range pools {
		if seen[pools[i].DaemonSet] > 1 {
			pools[i].DaemonSet = forcedDaemonSetName(pools[i].Owner, pools[i].Labels)
		}
	}
}

package routing

import (
	"fmt"
	"slices"
	"strings"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

// Cluster is a routing view that changes one driver at a time: the RBLNDrivers a cluster
// holds now plus the drivers a release will apply, replayed in order (`driverguard check`
// judges each rendered driver as the webhook would when Helm applies it). [Cluster.Assess]
// judges a driver against the drivers applied so far; [Cluster.Apply] and [Cluster.Delete]
// change the view and report the nodes whose owner or pool changes. Each call costs O(the
// nodes the driver's old or new selector matches + drivers), never O(all nodes), so replaying
// a release is linear in its drivers.
//
// The index behind it holds every driver that can ever be applied (each in its own slot, a
// stored driver and its update side by side), so its node groups never need rebuilding. A
// Cluster is not safe for concurrent use.
type Cluster struct {
	ix     *Index
	slotOf map[*v1alpha1.RBLNDriver]int32
	// upcoming are the drivers that may be applied, valid or not.
	upcoming map[*v1alpha1.RBLNDriver]bool
	named    map[string]int32 // name → its active slot
	// owner and pool of every node (by index into ix.nodes), as routing decides them now;
	// owner is a slot or noOwner.
	owner []int32
	pool  []string
	// excluded are the drivers of the view the operator leaves out of routing, by name: Route
	// lists them as invalid.
	excluded map[string]*v1alpha1.RBLNDriver
}

// NodeChange is a node whose routing a change moved: its new owner ("" for none) and pool.
type NodeChange struct {
	Name  string `json:"name"`
	Owner string `json:"owner"`
	Pool  string `json:"pool"`
}

// NewCluster indexes nodes, the drivers the cluster holds now (current, active from the
// start) and the drivers that may be applied later (upcoming, inactive until
// [Cluster.Apply]). The drivers the operator leaves out take no part in routing, as in
// [Route]: applying such an upcoming driver (an update the decision allows because the stored
// driver was refused alike) takes the driver of its name out of routing. The objects are referenced, not copied, and must not be
// modified while the Cluster is in use.
func NewCluster(nodes []Node, current []v1alpha1.RBLNDriver, upcoming []*v1alpha1.RBLNDriver, opts Options) *Cluster {
	all := make([]*v1alpha1.RBLNDriver, 0, len(current)+len(upcoming))
	for i := range current {
		all = append(all, &current[i])
	}
	all = append(all, upcoming...)
	ix, slotOf := newSlotIndex(all, nodes, opts)
	c := &Cluster{ix: ix, slotOf: slotOf, named: map[string]int32{}, upcoming: make(map[*v1alpha1.RBLNDriver]bool, len(upcoming)),
		excluded: map[string]*v1alpha1.RBLNDriver{}}
	for _, d := range upcoming {
		c.upcoming[d] = true
	}
	// Current drivers: one per name, as a cluster holds them (a duplicate name is invalid).
	stored := newIndex(current, nil, opts)
	for i := range current {
		d := &current[i]
		if _, valid := stored.byName[d.Name]; !valid {
			continue
		}
		if s, ok := slotOf[d]; ok {
			if _, taken := c.named[d.Name]; !taken {
				c.activate(s)
			}
		}
	}
	for i := range current {
		if d := &current[i]; excluded(d) != nil {
			if _, taken := c.named[d.Name]; !taken {
				c.excluded[d.Name] = d
			}
		}
	}
	c.owner = make([]int32, len(ix.nodes))
	c.pool = make([]string, len(ix.nodes))
	for i := range c.owner {
		c.owner[i] = noOwner
	}
	everyNode := make([]int32, len(ix.nodes))
	for i := range everyNode {
		everyNode[i] = int32(i)
	}
	c.reroute(everyNode)
	return c
}

func (c *Cluster) activate(s int32) {
	c.ix.active[s] = true
	c.named[c.ix.drivers[s].name] = s
}

// Assess judges candidate against the drivers applied so far, in place of the driver of the
// same name (see [Index.Assess]). candidate need not be one the Cluster was built with.
func (c *Cluster) Assess(candidate *v1alpha1.RBLNDriver) Assessment {
	replaced, ok := c.named[candidate.Name]
	if !ok {
		replaced = -1
	}
	return c.ix.assess(candidate, replaced, true)
}

// Conflicts is the conflict part of [Cluster.Assess].
func (c *Cluster) Conflicts(candidate v1alpha1.RBLNDriver) ConflictReport {
	replaced, ok := c.named[candidate.Name]
	if !ok {
		replaced = -1
	}
	return c.ix.assess(&candidate, replaced, false).ConflictReport
}

// Apply makes d, one of the upcoming drivers given to [NewCluster], take part in routing in
// place of the driver of the same name, and returns the nodes whose owner or pool changed,
// sorted by name. An invalid driver routes no node: it takes the driver of its name out of
// routing. It fails for a driver the Cluster was not built with as upcoming.
func (c *Cluster) Apply(d *v1alpha1.RBLNDriver) ([]NodeChange, error) {
	s, ok := c.slotOf[d]
	if !ok {
		if c.upcoming[d] {
			changes := c.Delete(d.Name)
			if excluded(d) != nil {
				c.excluded[d.Name] = d
			}
			return changes, nil
		}
		return nil, fmt.Errorf("routing: RBLNDriver %q is not one the cluster view was built with", d.Name)
	}
	delete(c.excluded, d.Name)
	affected := c.matched(s)
	if old, ok := c.named[d.Name]; ok {
		if old == s {
			return []NodeChange{}, nil
		}
		affected = append(affected, c.matched(old)...)
		c.ix.active[old] = false
	}
	c.activate(s)
	return c.reroute(affected), nil
}

// Delete removes the driver named name and returns the nodes whose owner or pool changed.
// Deleting a driver that is not there changes nothing.
func (c *Cluster) Delete(name string) []NodeChange {
	delete(c.excluded, name)
	s, ok := c.named[name]
	if !ok {
		return []NodeChange{}
	}
	affected := c.matched(s)
	c.ix.active[s] = false
	delete(c.named, name)
	return c.reroute(affected)
}

// Driver returns the active driver named name.
func (c *Cluster) Driver(name string) (*v1alpha1.RBLNDriver, bool) {
	s, ok := c.named[name]
	if !ok {
		return nil, false
	}
	return c.ix.drivers[s].obj, true
}

// Drivers returns the active drivers, sorted by name.
func (c *Cluster) Drivers() []*v1alpha1.RBLNDriver {
	out := make([]*v1alpha1.RBLNDriver, 0, len(c.named))
	for _, s := range c.named {
		out = append(out, c.ix.drivers[s].obj)
	}
	slices.SortFunc(out, func(a, b *v1alpha1.RBLNDriver) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Nodes returns every node with its owner and pool now, sorted by name.
func (c *Cluster) Nodes() []NodeChange {
	out := make([]NodeChange, len(c.ix.nodes))
	for i := range c.ix.nodes {
		out[i] = c.nodeState(int32(i))
	}
	return out
}

// Route routes the nodes with the active drivers ([Route] of the same state). It costs a
// full routing (O(nodes)); replaying a release calls it once, at the end.
func (c *Cluster) Route() *Result {
	drivers := make([]v1alpha1.RBLNDriver, 0, len(c.named)+len(c.excluded))
	for _, d := range c.Drivers() {
		drivers = append(drivers, *d)
	}
	for _, d := range c.excluded { // listed as invalid, routed nowhere
		drivers = append(drivers, *d)
	}
	return Route(drivers, c.ix.nodes, c.ix.opts)
}

func (c *Cluster) nodeState(n int32) NodeChange {
	st := NodeChange{Name: c.ix.nodes[n].Name, Pool: c.pool[n]}
	if o := c.owner[n]; o >= 0 {
		st.Owner = c.ix.drivers[o].name
	}
	return st
}

// matched returns the candidate nodes driver slot s's selector matches.
func (c *Cluster) matched(s int32) []int32 {
	var out []int32
	c.ix.forMatchingNodes(c.ix.drivers[s].sel, func(n int32) { out = append(out, n) })
	return out
}

// reroute decides the owner and pool of the given nodes (duplicates allowed) with the active
// drivers and returns those that changed, sorted by name.
func (c *Cluster) reroute(nodes []int32) []NodeChange {
	slices.Sort(nodes)
	nodes = slices.Compact(nodes)
	type resolved struct {
		owner int32
		tied  bool
	}
	byGroup := map[int32]resolved{}
	changes := []NodeChange{}
	for _, n := range nodes {
		owner, pool := noOwner, ""
		if gi := c.ix.nodeGroup[n]; gi >= 0 {
			g := &c.ix.groups[gi]
			r, ok := byGroup[gi]
			if !ok {
				live := make([]int32, 0, len(g.matches))
				for _, d := range g.matches {
					if c.ix.live(d) {
						live = append(live, d)
					}
				}
				o, tied := c.ix.resolve(live)
				r = resolved{owner: o, tied: tied != nil}
				byGroup[gi] = r
			}
			owner = r.owner
			if r.tied {
				// a tied node keeps its current owner if that driver still matches it
				if s, ok := c.named[c.ix.nodes[n].Labels[operator.LabelOwner]]; ok && g.has(s) {
					owner = s
				}
			}
			if owner >= 0 {
				pool = c.ix.pools[c.ix.nodePool[n]].pool.Name // "" when the node joins no pool
			}
		}
		before := c.nodeState(n)
		c.owner[n], c.pool[n] = owner, pool
		if after := c.nodeState(n); after != before { // an update keeps its name: not a move
			changes = append(changes, after)
		}
	}
	return changes
}

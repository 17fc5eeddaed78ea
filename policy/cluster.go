package policy

import (
	"context"
	"fmt"
	"maps"
	"reflect"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/routing"
)

// ClusterKey is the data document that holds the cluster view: policies read the cluster at
// data.driverguard_cluster (docs/webhook.md "Cost"). Policy directories may not set it.
const ClusterKey = "driverguard_cluster"

// ClusterView is the cluster as policies read it at data.driverguard_cluster:
//
//	drivers:       {<name>: <RBLNDriver>}           every RBLNDriver, the object under evaluation's stored version included
//	clusterPolicy: <RBLNClusterPolicy>              absent when there is none
//	nodes:         {<name>: {name, labels, owner, pool}}   owner and pool as routing decides them now
//	families:      {<rebellions.ai/npu.family value>: <number of nodes>}
//
// The engine holds one view, shared by every evaluation, and updates it in place: the
// webhook syncs it from its informer caches, `check` replays a release into it one object at
// a time. An evaluation's cost therefore never depends on the size of the cluster unless a
// policy chooses to iterate over it.
type ClusterView struct {
	// Drivers are every RBLNDriver of the cluster.
	Drivers []*v1alpha1.RBLNDriver
	// ClusterPolicy is the RBLNClusterPolicy that applies, or nil.
	ClusterPolicy *v1alpha1.RBLNClusterPolicy
	// Nodes are every node with its routing.
	Nodes []ClusterNode
}

// ClusterNode is a node as policies see it in data.driverguard_cluster.nodes.
type ClusterNode struct {
	Name string
	// Labels must not be modified after the node is handed to the engine (build a new map).
	Labels map[string]string
	// Owner is the RBLNDriver routing gives the node ("" for none), Pool its pool ("" for none).
	Owner string
	Pool  string
}

// ClusterPatch changes a synced cluster view (see [Engine.PatchCluster]).
type ClusterPatch struct {
	// Drivers are added, or replace the driver of the same name.
	Drivers []*v1alpha1.RBLNDriver
	// DeletedDrivers are removed.
	DeletedDrivers []string
	// ClusterPolicy, when set, replaces the cluster policy.
	ClusterPolicy *v1alpha1.RBLNClusterPolicy
	// Nodes give known nodes a new owner and pool.
	Nodes []routing.NodeChange
}

// clusterData is the engine's copy of the cluster view: every entry with its converted value,
// so that a new policy set's store is built without converting anything again, and a sync
// writes only what changed.
type clusterData struct {
	drivers       map[string]objectEntry
	clusterPolicy *objectEntry
	nodes         map[string]nodeEntry
	families      map[string]int
	// routes are the nodes' owner and pool pairs, shared by their entries.
	routes map[nodeRoute]*nodeRoute
	// withNodes is whether the active set's policies read data.driverguard_cluster.nodes:
	// only then are nodes converted and written to its store (10,000 nodes are most of the
	// view's memory, and of the collector's work while admission requests allocate).
	withNodes bool
	// declared are the node labels the active set's policies declare (custom.nodeLabels);
	// readKeys the labels a node's value holds: operator.NodeLabels, declared and every
	// driver's selector keys, what serve's cluster view keeps of a node, so that a policy sees
	// the same labels in `check`, `review`, the audit and the webhook (keysOf).
	declared []string
	readKeys map[string]bool
}

// keysOf is the set of labels a node's value holds with the drivers of c.
func (c *clusterData) keysOf() map[string]bool {
	keys := make(map[string]bool, len(operator.NodeLabels)+len(c.declared))
	for _, k := range operator.NodeLabels {
		keys[k] = true
	}
	for _, k := range c.declared {
		keys[k] = true
	}
	for _, e := range c.drivers {
		if d, ok := e.obj.(*v1alpha1.RBLNDriver); ok {
			for k := range d.Spec.NodeSelector {
				keys[k] = true
			}
		}
	}
	return keys
}

// refreshKeys recomputes readKeys and reports whether they changed; the nodes' values are then
// out of date (dropped: the caller rewrites the nodes).
func (c *clusterData) refreshKeys() bool {
	keys := c.keysOf()
	if maps.Equal(keys, c.readKeys) {
		return false
	}
	c.readKeys = keys
	for name, e := range c.nodes {
		if e.term != nil {
			e.term = nil
			c.nodes[name] = e
		}
	}
	return true
}

// setDeclared sets the labels the policies declare (a new policy set's).
func (c *clusterData) setDeclared(keys []string) {
	c.declared = keys
	c.refreshKeys()
}

type objectEntry struct {
	obj  any // the object the value was converted from
	rv   string
	term *ast.Term
}

// nodeEntry holds the labels map its identity is compared by (holding it, the map cannot be
// freed and its address reused by another map while the entry exists), and the node's owner
// and pool as a pair shared by the nodes that have them (one per pool: 24 bytes a node, which
// at 100,000 nodes is most of what the view holds). term is the node's value in
// data.driverguard_cluster.nodes, nil while no policy reads the nodes.
type nodeEntry struct {
	labels map[string]string
	route  *nodeRoute
	term   *ast.Term
}

// nodeRoute is a node's owner and pool.
type nodeRoute struct{ owner, pool string }

func (e *nodeEntry) value(name string, readKeys map[string]bool) *ast.Term {
	if e.term != nil {
		return e.term
	}
	return ast.NewTerm(nodeValue(&ClusterNode{Name: name, Labels: e.labels, Owner: e.route.owner, Pool: e.route.pool}, readKeys))
}

func newClusterData() *clusterData {
	c := &clusterData{drivers: map[string]objectEntry{}, nodes: map[string]nodeEntry{}, families: map[string]int{}, routes: map[nodeRoute]*nodeRoute{}}
	c.readKeys = c.keysOf()
	return c
}

// storeOp is one write to a policy set's store.
type storeOp struct {
	op    storage.PatchOp
	path  storage.Path
	value ast.Value
}

var (
	clusterPath       = storage.Path{ClusterKey}
	driversPath       = storage.Path{ClusterKey, "drivers"}
	clusterPolicyPath = storage.Path{ClusterKey, "clusterPolicy"}
	nodesPath         = storage.Path{ClusterKey, "nodes"}
	familiesPath      = storage.Path{ClusterKey, "families"}
)

func childPath(p storage.Path, key string) storage.Path {
	return append(append(storage.Path{}, p...), key)
}

// document builds data.driverguard_cluster from the entries, in new containers (the entries'
// values are shared: stores replace them, never change them). Without withNodes, nodes is
// empty; with it, the nodes converted here are kept when the view holds them (c.withNodes).
func (c *clusterData) document(withNodes bool) ast.Object {
	drivers := make([][2]*ast.Term, 0, len(c.drivers))
	for name, e := range c.drivers {
		drivers = append(drivers, [2]*ast.Term{ast.StringTerm(name), e.term})
	}
	var nodes [][2]*ast.Term
	if withNodes {
		nodes = make([][2]*ast.Term, 0, len(c.nodes))
		for name, e := range c.nodes {
			t := e.value(name, c.readKeys)
			if c.withNodes && e.term == nil {
				e.term = t
				c.nodes[name] = e
			}
			nodes = append(nodes, [2]*ast.Term{ast.StringTerm(name), t})
		}
	}
	families := make([][2]*ast.Term, 0, len(c.families))
	for f, n := range c.families {
		families = append(families, [2]*ast.Term{ast.StringTerm(f), ast.InternedTerm(n)})
	}
	doc := ast.NewObject(
		[2]*ast.Term{ast.InternedTerm("drivers"), ast.ObjectTerm(drivers...)},
		[2]*ast.Term{ast.InternedTerm("nodes"), ast.ObjectTerm(nodes...)},
		[2]*ast.Term{ast.InternedTerm("families"), ast.ObjectTerm(families...)},
	)
	if c.clusterPolicy != nil {
		doc.Insert(ast.InternedTerm("clusterPolicy"), c.clusterPolicy.term)
	}
	return doc
}

// setDriver records d and returns the write, or nothing when d is the entry already held.
func (c *clusterData) setDriver(d *v1alpha1.RBLNDriver) ([]storeOp, error) {
	if e, ok := c.drivers[d.Name]; ok && sameObject(e, d, d.ResourceVersion) {
		return nil, nil
	}
	v, err := objectValue(d.WithTypeMeta(), readAll)
	if err != nil {
		return nil, fmt.Errorf("policy: encoding RBLNDriver %q for data.%s: %w", d.Name, ClusterKey, err)
	}
	e := objectEntry{obj: d, rv: d.ResourceVersion, term: ast.NewTerm(v)}
	c.drivers[d.Name] = e
	return []storeOp{{op: storage.AddOp, path: childPath(driversPath, d.Name), value: v}}, nil
}

func (c *clusterData) deleteDriver(name string) []storeOp {
	if _, ok := c.drivers[name]; !ok {
		return nil
	}
	delete(c.drivers, name)
	return []storeOp{{op: storage.RemoveOp, path: childPath(driversPath, name)}}
}

func (c *clusterData) setClusterPolicy(cp *v1alpha1.RBLNClusterPolicy) ([]storeOp, error) {
	if cp == nil {
		if c.clusterPolicy == nil {
			return nil, nil
		}
		c.clusterPolicy = nil
		return []storeOp{{op: storage.RemoveOp, path: clusterPolicyPath}}, nil
	}
	if c.clusterPolicy != nil && sameObject(*c.clusterPolicy, cp, cp.ResourceVersion) {
		return nil, nil
	}
	v, err := objectValue(cp.WithTypeMeta(), readAll)
	if err != nil {
		return nil, fmt.Errorf("policy: encoding RBLNClusterPolicy %q for data.%s: %w", cp.Name, ClusterKey, err)
	}
	c.clusterPolicy = &objectEntry{obj: cp, rv: cp.ResourceVersion, term: ast.NewTerm(v)}
	return []storeOp{{op: storage.AddOp, path: clusterPolicyPath, value: v}}, nil
}

// sameObject reports whether obj is what e was converted from: the same object, or (objects
// read again from an informer cache) the same resourceVersion.
func sameObject(e objectEntry, obj any, rv string) bool {
	return e.obj == obj || (rv != "" && rv == e.rv)
}

// setNode records n and returns its writes (the node, and the families whose counts change).
func (c *clusterData) setNode(n ClusterNode) []storeOp {
	old, exists := c.nodes[n.Name]
	if exists && sameMap(old.labels, n.Labels) && old.route.owner == n.Owner && old.route.pool == n.Pool {
		return nil
	}
	var ops []storeOp
	if oldFamily, newFamily := old.labels[operator.LabelFamily], n.Labels[operator.LabelFamily]; !exists || oldFamily != newFamily {
		if exists {
			ops = c.countFamily(oldFamily, -1, ops)
		}
		ops = c.countFamily(newFamily, +1, ops)
	}
	r := nodeRoute{owner: n.Owner, pool: n.Pool}
	route, ok := c.routes[r]
	if !ok {
		route = &r
		c.routes[r] = route
	}
	e := nodeEntry{labels: n.Labels, route: route}
	if !c.withNodes {
		c.nodes[n.Name] = e
		return ops
	}
	v := nodeValue(&n, c.readKeys)
	e.term = ast.NewTerm(v)
	c.nodes[n.Name] = e
	return append(ops, storeOp{op: storage.AddOp, path: childPath(nodesPath, n.Name), value: v})
}

// pruneRoutes forgets the owner and pool pairs no node has any more, once the map holds twice
// as many as the nodes (and a margin): one pass over the nodes, not one per change.
func (c *clusterData) pruneRoutes() {
	if len(c.routes) <= 2*len(c.nodes)+64 {
		return
	}
	used := make(map[nodeRoute]*nodeRoute, len(c.nodes))
	for _, e := range c.nodes {
		used[*e.route] = e.route
	}
	c.routes = used
}

// sameMap reports whether a and b are one map.
func sameMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// holdNodes sets whether the view holds the nodes' values (see withNodes); without them, the
// values converted before are dropped.
func (c *clusterData) holdNodes(on bool) {
	if c.withNodes == on {
		return
	}
	c.withNodes = on
	if on {
		return
	}
	for name, e := range c.nodes {
		e.term = nil
		c.nodes[name] = e
	}
}

// routeNode gives a known node a new owner and pool.
func (c *clusterData) routeNode(ch routing.NodeChange) ([]storeOp, error) {
	e, ok := c.nodes[ch.Name]
	if !ok {
		return nil, fmt.Errorf("policy: node %q is not in the cluster view", ch.Name)
	}
	return c.setNode(ClusterNode{Name: ch.Name, Labels: e.labels, Owner: ch.Owner, Pool: ch.Pool}), nil
}

func (c *clusterData) countFamily(f string, delta int, ops []storeOp) []storeOp {
	if f == "" || (delta < 0 && c.families[f] == 0) {
		return ops
	}
	n := c.families[f] + delta
	if n <= 0 {
		delete(c.families, f)
		return append(ops, storeOp{op: storage.RemoveOp, path: childPath(familiesPath, f)})
	}
	c.families[f] = n
	return append(ops, storeOp{op: storage.AddOp, path: childPath(familiesPath, f), value: ast.InternedTerm(n).Value})
}

// sync makes v the view and returns the writes. Removals of nodes rewrite the nodes object
// once instead of removing entries one by one (each removal copies the object).
func (c *clusterData) sync(v *ClusterView) ([]storeOp, error) {
	var ops []storeOp
	seen := make(map[string]bool, len(v.Drivers))
	for _, d := range v.Drivers {
		seen[d.Name] = true
		o, err := c.setDriver(d)
		if err != nil {
			return nil, err
		}
		ops = append(ops, o...)
	}
	for name := range c.drivers {
		if !seen[name] {
			ops = append(ops, c.deleteDriver(name)...)
		}
	}
	o, err := c.setClusterPolicy(v.ClusterPolicy)
	if err != nil {
		return nil, err
	}
	ops = append(ops, o...)
	rewrite := c.refreshKeys() && c.withNodes // the drivers changed the labels a node holds

	present := make(map[string]bool, len(v.Nodes))
	var nodeOps []storeOp
	for _, n := range v.Nodes {
		present[n.Name] = true
		nodeOps = append(nodeOps, c.setNode(n)...)
	}
	removed := false
	for name, e := range c.nodes {
		if !present[name] {
			nodeOps = c.countFamily(e.labels[operator.LabelFamily], -1, nodeOps)
			delete(c.nodes, name)
			removed = true
		}
	}
	c.pruneRoutes()
	if !removed && !rewrite {
		return append(ops, nodeOps...), nil
	}
	// The nodes and families objects are rewritten whole.
	doc := c.document(c.withNodes)
	return append(ops,
		storeOp{op: storage.AddOp, path: nodesPath, value: doc.Get(ast.InternedTerm("nodes")).Value},
		storeOp{op: storage.AddOp, path: familiesPath, value: doc.Get(ast.InternedTerm("families")).Value},
	), nil
}

func (c *clusterData) patch(p *ClusterPatch) ([]storeOp, error) {
	var ops []storeOp
	for _, d := range p.Drivers {
		o, err := c.setDriver(d)
		if err != nil {
			return nil, err
		}
		ops = append(ops, o...)
	}
	for _, name := range p.DeletedDrivers {
		ops = append(ops, c.deleteDriver(name)...)
	}
	if p.ClusterPolicy != nil {
		o, err := c.setClusterPolicy(p.ClusterPolicy)
		if err != nil {
			return nil, err
		}
		ops = append(ops, o...)
	}
	rewrite := c.refreshKeys() && c.withNodes // the drivers changed the labels a node holds
	for _, ch := range p.Nodes {
		o, err := c.routeNode(ch)
		if err != nil {
			return nil, err
		}
		ops = append(ops, o...)
	}
	if rewrite {
		ops = append(ops, storeOp{op: storage.AddOp, path: nodesPath, value: c.document(true).Get(ast.InternedTerm("nodes")).Value})
	}
	return ops, nil
}

// SyncCluster makes v the cluster view (data.driverguard_cluster), writing only the entries
// that changed since the previous view. Objects are compared by identity or resourceVersion,
// nodes by the identity of their labels map, owner and pool: callers hand in fresh maps for
// changed labels, as informer caches do. SyncCluster implements [ClusterSyncer].
func (e *Engine) SyncCluster(ctx context.Context, v *ClusterView) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	ops, err := e.cluster.sync(v)
	if err != nil {
		return err
	}
	return e.writeCluster(ctx, ops)
}

// PatchCluster applies one change to the cluster view: what `check` does after it judged an
// object and applied it. Its cost is the size of the patch.
func (e *Engine) PatchCluster(ctx context.Context, p *ClusterPatch) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	ops, err := e.cluster.patch(p)
	if err != nil {
		return err
	}
	return e.writeCluster(ctx, ops)
}

// ClusterDocument returns data.driverguard_cluster as JSON-compatible values (for `policy
// data` and tests), nodes included whether or not the policies read them.
func (e *Engine) ClusterDocument() (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return ast.JSON(e.cluster.document(true))
}

// maxEntryWrites is the most entries one cluster write changes one by one.
const maxEntryWrites = 64

// writeCluster applies ops to the active set's store in one transaction. e.mu must be held,
// so that no reload replaces the set in between (a new set's store is built from e.cluster).
func (e *Engine) writeCluster(ctx context.Context, ops []storeOp) error {
	if len(ops) == 0 {
		return nil
	}
	if len(ops) > maxEntryWrites {
		// An inmem transaction compares every write with the writes before it: many entries
		// are cheaper written as one new document.
		ops = []storeOp{{op: storage.AddOp, path: clusterPath, value: e.cluster.document(e.cluster.withNodes)}}
	}
	// The object guards read the families outside the store: before the write they see the
	// families before and after it, after the write the new ones.
	next := e.cluster.lowerFamilies()
	both := maps.Clone(next)
	maps.Copy(both, *e.families.Load())
	e.families.Store(&both)
	st := e.active.Load().store
	txn, err := st.NewTransaction(ctx, storage.WriteParams)
	if err != nil {
		return fmt.Errorf("policy: updating data.%s: %w", ClusterKey, err)
	}
	for _, op := range ops {
		var value any
		if op.value != nil {
			value = op.value
		}
		if err := st.Write(ctx, txn, op.op, op.path, value); err != nil {
			st.Abort(ctx, txn)
			return fmt.Errorf("policy: updating data.%s at %s: %w", ClusterKey, op.path, err)
		}
	}
	if err := st.Commit(ctx, txn); err != nil {
		return err // the families stay the superset
	}
	e.families.Store(&next)
	return nil
}

// RoutingOf converts routing's assessment of a driver with spec into input.routing.
func RoutingOf(a *routing.Assessment, spec *v1alpha1.RBLNDriverSpec) *Routing {
	r := &Routing{
		Selected:      a.Selected,
		Nodes:         a.Owns + a.Kept,
		Pools:         make([]Pool, len(a.Pools)),
		Unpooled:      make([]UnpooledNode, len(a.Unpooled)),
		Ties:          make([]Tie, len(a.Ties)),
		PotentialTies: make([]PotentialTie, len(a.Potential)),
	}
	for i, p := range a.Pools {
		r.Pools[i] = Pool{
			Name: p.Name, DaemonSet: p.DaemonSet,
			Family: p.Labels.Family, OS: p.Labels.OSID, OSVersion: p.Labels.OSVersion, Kernel: p.Labels.Kernel,
			Tag: routing.DriverTag(spec, p.Labels), Image: p.Image, Reason: p.Reason, Nodes: p.Nodes,
		}
	}
	for i, n := range a.Unpooled {
		r.Unpooled[i] = UnpooledNode{Name: n.Name, Reason: n.Reason}
	}
	for i, t := range a.Ties {
		r.Ties[i] = Tie{Resources: t.Resources, Nodes: t.Nodes, Total: t.Total}
	}
	for i, p := range a.Potential {
		r.PotentialTies[i] = PotentialTie{Resource: p.Resource, Identical: p.Identical, Labels: p.Labels}
	}
	return r
}

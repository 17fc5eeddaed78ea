package policy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

// inputValue converts the input document to the AST value OPA evaluates. The result equals
// the AST of the document's JSON form (what `driverguard policy input` prints; a test keeps
// the two equal), but the parts driverguard defines — the envelope and the nodes, the bulk
// of a large cluster — are built directly instead of through JSON text; objects go through
// JSON once each.
func inputValue(in *Input, memo *valueMemo) (ast.Value, error) {
	obj, err := jsonValue(in.Object)
	if err != nil {
		return nil, fmt.Errorf("policy: encoding input.object: %w", err)
	}
	cluster, err := clusterValue(&in.Cluster, memo)
	if err != nil {
		return nil, err
	}
	terms := [][2]*ast.Term{
		{ast.InternedTerm("object"), ast.NewTerm(obj)},
		{ast.InternedTerm("operation"), ast.StringTerm(in.Operation)},
		{ast.InternedTerm("source"), ast.StringTerm(string(in.Source))},
		{ast.InternedTerm("cluster"), ast.NewTerm(cluster)},
	}
	if in.OldObject != nil {
		old, err := jsonValue(in.OldObject)
		if err != nil {
			return nil, fmt.Errorf("policy: encoding input.oldObject: %w", err)
		}
		terms = append(terms, [2]*ast.Term{ast.InternedTerm("oldObject"), ast.NewTerm(old)})
	}
	if in.UserInfo != nil {
		u, err := jsonValue(in.UserInfo)
		if err != nil {
			return nil, fmt.Errorf("policy: encoding input.userInfo: %w", err)
		}
		terms = append(terms, [2]*ast.Term{ast.InternedTerm("userInfo"), ast.NewTerm(u)})
	}
	return ast.NewObject(terms...), nil
}

// valueMemo shares converted values between the inputs of one EvaluateAll batch, which
// describe one cluster state: a driver name stands for one object, and the cluster policy and
// nodes are the same values (the same pointer, the same slice).
type valueMemo struct {
	drivers       map[string]*ast.Term // nil: drivers are not shared (one Evaluate call)
	clusterPolicy *v1alpha1.RBLNClusterPolicy
	policyTerm    *ast.Term
	nodes         *Node // the first element of the converted nodes slice
	nodesLen      int
	nodesTerm     *ast.Term
	// nodeCache, when set, keeps converted nodes across calls (the webhook's requests).
	nodeCache *nodeCache
}

// nodeCache keeps the converted value of each node across Evaluate calls. The webhook builds
// every request's input from an immutable cluster snapshot, so a node's labels map is the same
// map from request to request until the snapshot is rebuilt; converting 10,000 nodes per
// request was most of the cost of a policy evaluation. A node is keyed by its name, owner,
// pool and the identity of its labels map (maps are never modified once in an Input).
type nodeCache struct {
	mu sync.Mutex
	m  map[nodeKey]nodeEntry
}

// nodeEntry holds the labels map its key points to, so that map cannot be freed and its
// address reused by another map while the entry exists.
type nodeEntry struct {
	labels map[string]string
	term   *ast.Term
}

type nodeKey struct {
	name, owner, pool string
	labels            unsafe.Pointer
}

func newNodeCache() *nodeCache { return &nodeCache{m: map[nodeKey]nodeEntry{}} }

// terms converts nodes, reusing cached values. The cache is dropped when it holds far more
// entries than a request needs (older snapshots' nodes).
func (c *nodeCache) terms(nodes []Node) []*ast.Term {
	out := make([]*ast.Term, len(nodes))
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) > 2*len(nodes)+1024 {
		c.m = make(map[nodeKey]nodeEntry, len(nodes))
	}
	for i := range nodes {
		n := &nodes[i]
		k := nodeKey{name: n.Name, owner: n.Owner, pool: n.Pool, labels: reflect.ValueOf(n.Labels).UnsafePointer()}
		e, ok := c.m[k]
		if !ok {
			e = nodeEntry{labels: n.Labels, term: ast.NewTerm(nodeValue(n))}
			c.m[k] = e
		}
		out[i] = e.term
	}
	return out
}

func clusterValue(c *Cluster, memo *valueMemo) (ast.Value, error) {
	drivers := make([]*ast.Term, len(c.Drivers))
	for i := range c.Drivers {
		d := &c.Drivers[i]
		if memo != nil && memo.drivers[d.Name] != nil {
			drivers[i] = memo.drivers[d.Name]
			continue
		}
		v, err := jsonValue(d)
		if err != nil {
			return nil, fmt.Errorf("policy: encoding input.cluster.drivers[%d]: %w", i, err)
		}
		drivers[i] = ast.NewTerm(v)
		if memo != nil && memo.drivers != nil {
			memo.drivers[d.Name] = drivers[i]
		}
	}
	terms := [][2]*ast.Term{{ast.InternedTerm("drivers"), ast.ArrayTerm(drivers...)}}
	if c.ClusterPolicy != nil {
		t, err := memo.clusterPolicyTerm(c.ClusterPolicy)
		if err != nil {
			return nil, fmt.Errorf("policy: encoding input.cluster.clusterPolicy: %w", err)
		}
		terms = append(terms, [2]*ast.Term{ast.InternedTerm("clusterPolicy"), t})
	}
	if len(c.Nodes) > 0 {
		terms = append(terms, [2]*ast.Term{ast.InternedTerm("nodes"), memo.nodesValue(c.Nodes)})
	}
	return ast.NewObject(terms...), nil
}

func (m *valueMemo) clusterPolicyTerm(cp *v1alpha1.RBLNClusterPolicy) (*ast.Term, error) {
	if m != nil && m.clusterPolicy == cp {
		return m.policyTerm, nil
	}
	v, err := jsonValue(cp)
	if err != nil {
		return nil, err
	}
	t := ast.NewTerm(v)
	if m != nil {
		m.clusterPolicy, m.policyTerm = cp, t
	}
	return t, nil
}

func (m *valueMemo) nodesValue(nodes []Node) *ast.Term {
	if m != nil && m.nodes == &nodes[0] && m.nodesLen == len(nodes) {
		return m.nodesTerm
	}
	var terms []*ast.Term
	if m != nil && m.nodeCache != nil {
		terms = m.nodeCache.terms(nodes)
	} else {
		terms = make([]*ast.Term, len(nodes))
		for i := range nodes {
			terms[i] = ast.NewTerm(nodeValue(&nodes[i]))
		}
	}
	t := ast.ArrayTerm(terms...)
	if m != nil {
		m.nodes, m.nodesLen, m.nodesTerm = &nodes[0], len(nodes), t
	}
	return t
}

func nodeValue(n *Node) ast.Value {
	labels := make([][2]*ast.Term, 0, len(n.Labels))
	for k, v := range n.Labels {
		labels = append(labels, [2]*ast.Term{ast.StringTerm(k), ast.StringTerm(v)})
	}
	return ast.NewObject(
		[2]*ast.Term{ast.InternedTerm("name"), ast.StringTerm(n.Name)},
		[2]*ast.Term{ast.InternedTerm("labels"), ast.ObjectTerm(labels...)},
		[2]*ast.Term{ast.InternedTerm("owner"), ast.StringTerm(n.Owner)},
		[2]*ast.Term{ast.InternedTerm("pool"), ast.StringTerm(n.Pool)},
	)
}

// jsonValue converts any value through its JSON form.
func jsonValue(x any) (ast.Value, error) {
	b, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := util.UnmarshalJSON(b, &doc); err != nil {
		return nil, err
	}
	return ast.InterfaceToValue(doc)
}

package policy

import (
	"encoding/json"
	"iter"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/routing"
)

// Operations of Input.Operation.
const (
	OperationCreate = "CREATE"
	OperationUpdate = "UPDATE"
	OperationDelete = "DELETE"
)

// MarshalJSON writes drivers as [] when there are none, so that the document always matches
// the input schema.
func (c Cluster) MarshalJSON() ([]byte, error) {
	type plain Cluster
	p := plain(c)
	if p.Drivers == nil {
		p.Drivers = []v1alpha1.RBLNDriver{}
	}
	return json.Marshal(p)
}

// MarshalJSON writes labels as {} when there are none.
func (n Node) MarshalJSON() ([]byte, error) {
	type plain Node
	p := plain(n)
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	return json.Marshal(p)
}

// ClusterNodes describes nodes as input.cluster.nodes lists them, with each node's owner and
// pool from res (the routing of the same nodes). It returns nil for no nodes: the input then
// omits cluster.nodes (not known).
func ClusterNodes(nodes []routing.Node, res *routing.Result) []Node {
	if len(nodes) == 0 {
		return nil
	}
	var routed map[string]*routing.NodeResult // built only when res is not in nodes' order
	out := make([]Node, len(nodes))
	for i, n := range nodes {
		out[i] = Node{Name: n.Name, Labels: n.Labels}
		var r *routing.NodeResult
		if i < len(res.Nodes) && res.Nodes[i].Name == n.Name {
			r = &res.Nodes[i]
		} else {
			if routed == nil {
				routed = make(map[string]*routing.NodeResult, len(res.Nodes))
				for j := range res.Nodes {
					routed[res.Nodes[j].Name] = &res.Nodes[j]
				}
			}
			r = routed[n.Name]
		}
		if r != nil {
			out[i].Owner, out[i].Pool = r.Owner, r.Pool
		}
	}
	return out
}

// RenderInputs yields the input documents `driverguard check` evaluates for rendered objects,
// in render's order: the RBLNClusterPolicy (when not nil), then each RBLNDriver. Every input
// has source render and operation CREATE; cluster.drivers are the other rendered drivers,
// cluster.clusterPolicy the rendered one, and cluster.nodes the nodes (when any) routed to
// the rendered drivers. Each yielded Input is new; the objects are shared, not copied.
func RenderInputs(drivers []v1alpha1.RBLNDriver, clusterPolicy *v1alpha1.RBLNClusterPolicy, nodes []routing.Node) iter.Seq[*Input] {
	var cluster []Node
	if len(nodes) > 0 {
		cluster = ClusterNodes(nodes, routing.Route(drivers, nodes))
	}
	newInput := func(obj any, others []v1alpha1.RBLNDriver) *Input {
		return &Input{
			Object:    obj,
			Operation: OperationCreate,
			Source:    SourceRender,
			Cluster:   Cluster{Drivers: others, ClusterPolicy: clusterPolicy, Nodes: cluster},
		}
	}
	return func(yield func(*Input) bool) {
		if clusterPolicy != nil && !yield(newInput(clusterPolicy, drivers)) {
			return
		}
		for i := range drivers {
			others := make([]v1alpha1.RBLNDriver, 0, len(drivers)-1)
			others = append(others, drivers[:i]...)
			others = append(others, drivers[i+1:]...)
			if !yield(newInput(&drivers[i], others)) {
				return
			}
		}
	}
}

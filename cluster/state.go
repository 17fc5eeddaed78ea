package cluster

import (
	"slices"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/routing"
)

// Workloads are the Pods, PodDisruptionBudgets, ReplicaSets, Deployments and StatefulSets a
// plan reads for drain blockers.
type Workloads = decode.Workloads

// State is a cluster: its nodes, RBLNDrivers, RBLNClusterPolicies and (when known) workloads.
//
// Lists keep the order they were given in, duplicate names included (routing reports a
// duplicate driver; a cluster never holds one): Set replaces the first object of a name or
// appends, Delete removes every object of a name. The zero value is an empty cluster. A State
// is not safe for concurrent use.
type State struct {
	nodes     []routing.Node
	drivers   []v1alpha1.RBLNDriver
	policies  []v1alpha1.RBLNClusterPolicy
	workloads *Workloads

	// sources say what the State was read from; driversUnknown that no RBLNDriver list was
	// read (a State built from lists knows its drivers).
	sources        Sources
	driversUnknown bool

	nodeAt map[string]int // index of the first node of each name; nil: build on next SetNode
	// kept is, for an Informed's State, the version of the LabelKeys each node's labels were
	// kept with (by index; shorter than nodes when not set for the last ones).
	kept []int32
}

// FromLists is the cluster of the given objects; wl is nil when the workloads are not known.
func FromLists(nodes []routing.Node, drivers []v1alpha1.RBLNDriver, policies []v1alpha1.RBLNClusterPolicy, wl *Workloads) *State {
	return &State{nodes: nodes, drivers: drivers, policies: policies, workloads: wl}
}

// Nodes are the nodes, in the order they were set. The slice is the State's: read it only.
func (s *State) Nodes() []routing.Node { return s.nodes }

// Drivers are the RBLNDrivers, in the order they were set. The slice is the State's: read it
// only.
func (s *State) Drivers() []v1alpha1.RBLNDriver { return s.drivers }

// ClusterPolicy is the RBLNClusterPolicy that applies: the one rbln-npu-operator reads
// (operator.ActiveClusterPolicy: the oldest whose status.state is not ignored); nil for none.
func (s *State) ClusterPolicy() *v1alpha1.RBLNClusterPolicy {
	metas := make([]operator.PolicyMeta, len(s.policies))
	for i, cp := range s.policies {
		metas[i] = operator.PolicyMeta{Name: cp.Name, Created: cp.CreationTimestamp.Time, State: cp.Status.State}
	}
	if i := operator.ActiveClusterPolicy(metas); i >= 0 {
		return &s.policies[i]
	}
	return nil
}

// Workloads are the workloads; nil when they are not known.
func (s *State) Workloads() *Workloads { return s.workloads }

// SetNode adds n, or replaces the node of its name.
// It costs a map lookup: an informer sets every node on start and on every label change.
func (s *State) SetNode(n routing.Node) {
	if s.nodeAt == nil {
		s.indexNodes()
	}
	if i, ok := s.nodeAt[n.Name]; ok {
		s.nodes[i] = n
		return
	}
	s.nodeAt[n.Name] = len(s.nodes)
	s.nodes = append(s.nodes, n)
}

// Node returns the (first) node named name.
func (s *State) Node(name string) (routing.Node, bool) {
	if s.nodeAt == nil {
		s.indexNodes()
	}
	if i, ok := s.nodeAt[name]; ok {
		return s.nodes[i], true
	}
	return routing.Node{}, false
}

func (s *State) indexNodes() {
	s.nodeAt = make(map[string]int, len(s.nodes))
	for i := len(s.nodes) - 1; i >= 0; i-- {
		s.nodeAt[s.nodes[i].Name] = i
	}
}

// DeleteNode removes the node named name.
func (s *State) DeleteNode(name string) {
	j := 0
	for i, n := range s.nodes {
		if n.Name == name {
			continue
		}
		s.nodes[j] = n
		if i < len(s.kept) {
			s.kept = append(s.kept[:j], s.kept[i])
		}
		j++
	}
	clear(s.nodes[j:])
	s.nodes = s.nodes[:j]
	s.kept = s.kept[:min(len(s.kept), j)]
	s.nodeAt = nil
}

// setNodeKept is SetNode recording the version of the LabelKeys n's labels were kept with.
func (s *State) setNodeKept(n routing.Node, version int64) {
	s.SetNode(n)
	i := s.nodeAt[n.Name]
	for len(s.kept) <= i {
		s.kept = append(s.kept, 0)
	}
	s.kept[i] = int32(version)
}

// nodeKept returns the version setNodeKept recorded for the node named name.
func (s *State) nodeKept(name string) (int64, bool) {
	if s.nodeAt == nil {
		s.indexNodes()
	}
	i, ok := s.nodeAt[name]
	if !ok || i >= len(s.kept) {
		return 0, false
	}
	return int64(s.kept[i]), true
}

// SetDriver adds d, or replaces the RBLNDriver of its name.
func (s *State) SetDriver(d v1alpha1.RBLNDriver) {
	s.drivers = set(s.drivers, d, func(m v1alpha1.RBLNDriver) string { return m.Name })
}

// DeleteDriver removes the RBLNDriver named name.
func (s *State) DeleteDriver(name string) {
	s.drivers = slices.DeleteFunc(s.drivers, func(d v1alpha1.RBLNDriver) bool { return d.Name == name })
}

// SetClusterPolicy adds cp, or replaces the RBLNClusterPolicy of its name.
func (s *State) SetClusterPolicy(cp v1alpha1.RBLNClusterPolicy) {
	s.policies = set(s.policies, cp, func(m v1alpha1.RBLNClusterPolicy) string { return m.Name })
}

// DeleteClusterPolicy removes the RBLNClusterPolicy named name.
func (s *State) DeleteClusterPolicy(name string) {
	s.policies = slices.DeleteFunc(s.policies, func(cp v1alpha1.RBLNClusterPolicy) bool { return cp.Name == name })
}

// SetWorkloads sets the workloads (nil: not known).
func (s *State) SetWorkloads(wl *Workloads) { s.workloads = wl }

// set replaces the first element of list named as v, or appends v.
func set[T any](list []T, v T, name func(T) string) []T {
	if i := slices.IndexFunc(list, func(e T) bool { return name(e) == name(v) }); i >= 0 {
		list[i] = v
		return list
	}
	return append(list, v)
}

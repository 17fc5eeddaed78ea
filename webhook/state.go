package webhook

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/routing"
)

// State is the webhook's view of the cluster. The webhook asks it for one [Snapshot] per
// admission request, so a request sees drivers, nodes, the cluster policy and the routing
// index of the same moment.
//
// Two implementations exist: [CacheState] (informer caches of a live cluster, for `serve`) and
// [StaticState] (objects read from files, for `review` and tests).
type State interface {
	// Snapshot returns the current view. It fails with an error that maps to 503 Service
	// Unavailable when the view is not ready yet (caches not synced).
	Snapshot(ctx context.Context) (*Snapshot, error)
}

// Snapshot is an immutable view of the cluster: the RBLNDrivers, the nodes (name and labels),
// the RBLNClusterPolicy, and the routing index built from them once. Callers must not modify
// anything reachable from it.
type Snapshot struct {
	drivers       []v1alpha1.RBLNDriver // sorted by name
	nodes         []routing.Node        // sorted by name
	clusterPolicy *v1alpha1.RBLNClusterPolicy
	index         *routing.Index

	routeOnce sync.Once
	route     *routing.Result
}

// NewSnapshot builds a snapshot and its routing index. It takes ownership of the slices and
// of the objects they reference. clusterPolicies may hold any number of RBLNClusterPolicies;
// see [Snapshot.ClusterPolicy] for which one counts.
func NewSnapshot(drivers []v1alpha1.RBLNDriver, nodes []routing.Node, clusterPolicies []v1alpha1.RBLNClusterPolicy) *Snapshot {
	slices.SortStableFunc(drivers, func(a, b v1alpha1.RBLNDriver) int { return strings.Compare(a.Name, b.Name) })
	slices.SortStableFunc(nodes, func(a, b routing.Node) int { return strings.Compare(a.Name, b.Name) })
	return &Snapshot{
		drivers:       drivers,
		nodes:         nodes,
		clusterPolicy: pickClusterPolicy(clusterPolicies),
		index:         routing.NewIndex(drivers, nodes),
	}
}

// pickClusterPolicy chooses the RBLNClusterPolicy that applies: the one named
// rbln-cluster-policy (the singleton the chart renders) if it exists, otherwise the first by
// name, otherwise none.
func pickClusterPolicy(cps []v1alpha1.RBLNClusterPolicy) *v1alpha1.RBLNClusterPolicy {
	var best *v1alpha1.RBLNClusterPolicy
	for i := range cps {
		cp := &cps[i]
		switch {
		case cp.Name == v1alpha1.ClusterPolicyName:
			return cp
		case best == nil || cp.Name < best.Name:
			best = cp
		}
	}
	return best
}

// Drivers returns every RBLNDriver, sorted by name.
func (s *Snapshot) Drivers() []v1alpha1.RBLNDriver { return s.drivers }

// Nodes returns every node (name and labels), sorted by name.
func (s *Snapshot) Nodes() []routing.Node { return s.nodes }

// ClusterPolicy returns the RBLNClusterPolicy that applies, or nil when there is none.
func (s *Snapshot) ClusterPolicy() *v1alpha1.RBLNClusterPolicy { return s.clusterPolicy }

// Index returns the routing index of the snapshot's drivers and nodes.
func (s *Snapshot) Index() *routing.Index { return s.index }

// Driver returns the RBLNDriver named name.
func (s *Snapshot) Driver(name string) (*v1alpha1.RBLNDriver, bool) {
	i, ok := slices.BinarySearchFunc(s.drivers, name, func(d v1alpha1.RBLNDriver, n string) int { return strings.Compare(d.Name, n) })
	if !ok {
		return nil, false
	}
	return &s.drivers[i], true
}

// AutoUpgrade reports the cluster policy's upgradePolicy.autoUpgrade (false without a policy).
func (s *Snapshot) AutoUpgrade() bool {
	return s.clusterPolicy != nil && s.clusterPolicy.Spec.Driver.UpgradePolicy.AutoUpgrade
}

// Route returns the routing of the snapshot, computed once on first use (only the policies'
// cluster view needs it).
func (s *Snapshot) Route() *routing.Result {
	s.routeOnce.Do(func() { s.route = s.index.Route() })
	return s.route
}

// ClusterView is the snapshot as policies read it (data.driverguard_cluster): every driver,
// the cluster policy, and every node with the owner and pool routing gives it.
func (s *Snapshot) ClusterView() *policy.ClusterView {
	v := &policy.ClusterView{ClusterPolicy: s.clusterPolicy, Drivers: make([]*v1alpha1.RBLNDriver, len(s.drivers)), Nodes: make([]policy.ClusterNode, len(s.nodes))}
	for i := range s.drivers {
		v.Drivers[i] = &s.drivers[i]
	}
	res := s.Route()
	for i, n := range s.nodes {
		v.Nodes[i] = policy.ClusterNode{Name: n.Name, Labels: n.Labels}
		if i < len(res.Nodes) && res.Nodes[i].Name == n.Name { // both sorted by name
			v.Nodes[i].Owner, v.Nodes[i].Pool = res.Nodes[i].Owner, res.Nodes[i].Pool
		}
	}
	return v
}

// syncingState is a State that keeps a policy engine's cluster view
// (data.driverguard_cluster) equal to its snapshots; New hands it the decisions' evaluator
// when that reads the cluster.
type syncingState interface {
	syncTo(policy.ClusterSyncer)
}

// StaticState is a State that never changes: cluster state read from files (`driverguard
// review`) or built by tests.
type StaticState struct {
	snap *Snapshot

	syncer   policy.ClusterSyncer
	syncOnce sync.Once
	syncErr  error
}

// NewStaticState returns a State whose every snapshot is built from these objects.
func NewStaticState(drivers []v1alpha1.RBLNDriver, nodes []routing.Node, clusterPolicies []v1alpha1.RBLNClusterPolicy) *StaticState {
	return &StaticState{snap: NewSnapshot(drivers, nodes, clusterPolicies)}
}

func (s *StaticState) syncTo(syncer policy.ClusterSyncer) { s.syncer = syncer }

// Snapshot implements State. The first call syncs the policies' cluster view.
func (s *StaticState) Snapshot(ctx context.Context) (*Snapshot, error) {
	if s.syncer != nil {
		s.syncOnce.Do(func() { s.syncErr = s.syncer.SyncCluster(ctx, s.snap.ClusterView()) })
		if s.syncErr != nil {
			return nil, unavailable("loading the cluster view into the policy engine: %v", s.syncErr)
		}
	}
	return s.snap, nil
}

package webhook

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/driverguard/driverguard/api/v1alpha1"
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

// Route returns the routing of the snapshot, computed once on first use (only the policy hook
// needs it).
func (s *Snapshot) Route() *routing.Result {
	s.routeOnce.Do(func() { s.route = s.index.Route() })
	return s.route
}

// StaticState is a State that never changes: cluster state read from files (`driverguard
// review`) or built by tests.
type StaticState struct {
	snap *Snapshot
}

// NewStaticState returns a State whose every snapshot is built from these objects.
func NewStaticState(drivers []v1alpha1.RBLNDriver, nodes []routing.Node, clusterPolicies []v1alpha1.RBLNClusterPolicy) *StaticState {
	return &StaticState{snap: NewSnapshot(drivers, nodes, clusterPolicies)}
}

// Snapshot implements State.
func (s *StaticState) Snapshot(context.Context) (*Snapshot, error) { return s.snap, nil }
